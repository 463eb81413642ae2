"""The stk_ key format: shape, checksum, hashing; nothing here needs a database."""

from stockade.identity import keys
from stockade.identity.access import effective_scope
from stockade.identity.passwords import hash_password, verify_password
from stockade.identity.tables import Deployment, Scope


def test_generated_key_has_prefix_id_secret_checksum():
    key = keys.generate_key()
    assert key.plaintext.startswith("stk_")
    assert len(key.plaintext) == keys.KEY_LEN == 54
    assert key.plaintext[4:16] == key.key_id
    assert keys.key_id_of(key.plaintext) == key.key_id
    assert key.key_hash == keys.hash_key(key.plaintext)
    assert key.plaintext not in key.key_hash


def test_keys_are_unique():
    assert len({keys.generate_key().plaintext for _ in range(200)}) == 200


def test_one_changed_character_fails_the_checksum():
    key = keys.generate_key().plaintext
    for i in range(4, len(key)):
        replacement = "a" if key[i] != "a" else "b"
        assert keys.key_id_of(key[:i] + replacement + key[i + 1 :]) is None


def test_malformed_keys_are_rejected_without_lookup():
    good = keys.generate_key().plaintext
    for bad in [
        None,
        "",
        "stk_",
        good[:-1],
        good + "x",
        "xyz_" + good[4:],
        good.replace("stk_", "STK_"),
        "stk_" + "-" * 50,
    ]:
        assert keys.key_id_of(bad) is None


def test_display_never_contains_the_secret():
    key = keys.generate_key()
    shown = keys.display(key.key_id, key.last_four)
    assert shown == f"stk_{key.key_id}...{key.plaintext[-4:]}"
    assert key.plaintext[16:48] not in shown


def test_hashes_match_is_exact():
    h = keys.hash_key("stk_x")
    assert keys.hashes_match(h, keys.hash_key("stk_x"))
    assert not keys.hashes_match(h, keys.hash_key("stk_y"))


def test_a_presented_key_matches_only_its_own_stored_hash():
    key = keys.generate_key()
    presented = keys.presented(key.plaintext)
    assert presented.key_id == key.key_id
    assert keys.verify_presented(presented, key.key_hash)
    assert not keys.verify_presented(presented, keys.generate_key().key_hash)
    assert not keys.verify_presented(presented, None)  # no such key
    for malformed in (None, "", "junk"):  # looked up as the placeholder id, never matching
        assert keys.presented(malformed).key_id == keys.PLACEHOLDER_ID
        assert not keys.verify_presented(keys.presented(malformed), None)


def test_effective_scope_rules():
    on, hosted = Deployment.ONPREM, Deployment.HOSTED
    assert effective_scope("write", "onprem", on) is Scope.WRITE
    assert effective_scope("read", "onprem", on) is Scope.READ
    assert effective_scope(None, "onprem", on) is Scope.READ  # created before scopes existed
    assert effective_scope(None, "hosted", on) is Scope.READ
    assert effective_scope("write", "onprem", hosted) is Scope.READ  # hosted deployments only read


def test_password_hash_round_trip():
    stored = hash_password("correct horse")
    assert "correct horse" not in stored
    assert verify_password("correct horse", stored)
    assert not verify_password("wrong", stored)
    assert not verify_password("x", None)
