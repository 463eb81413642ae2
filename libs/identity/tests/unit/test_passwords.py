"""Password hashes: argon2id for new ones, scrypt ones still verify and ask to be replaced; the work runs on the
hashing thread pool, never on the event loop's thread."""

import asyncio
import base64
import hashlib
import threading

import pytest

from stockade.identity import passwords
from stockade.identity.passwords import hash_password, needs_rehash, verify_password


def scrypt_hash(password: str, salt: bytes = b"0123456789abcdef") -> str:
    """The format stored before argon2 (``scrypt$n$r$p$salt$hash``)."""
    digest = hashlib.scrypt(password.encode(), salt=salt, n=2**14, r=8, p=1, dklen=32)
    return f"scrypt${2**14}$8$1${base64.b64encode(salt).decode()}${base64.b64encode(digest).decode()}"


def test_new_hashes_are_argon2id_with_the_owasp_parameters():
    stored = hash_password("correct horse battery")
    assert stored.startswith("$argon2id$v=19$m=19456,t=2,p=1$")
    assert verify_password("correct horse battery", stored) and not verify_password("wrong", stored)
    assert hash_password("correct horse battery") != stored  # salted
    assert not needs_rehash(stored)


def test_scrypt_hashes_still_verify_and_need_a_rehash():
    old = scrypt_hash("correct horse battery")
    assert verify_password("correct horse battery", old) and not verify_password("wrong", old)
    assert needs_rehash(old)
    weaker = passwords.PasswordHasher(time_cost=1, memory_cost=8 * 1024, parallelism=1).hash("x" * 10)
    assert verify_password("x" * 10, weaker) and needs_rehash(weaker)


@pytest.mark.parametrize("stored", [None, "", "garbage", "scrypt$1$2", "$argon2id$v=19$broken", "md5$abc"])
def test_anything_else_never_matches(stored):
    assert not verify_password("anything", stored)


async def test_hashing_and_verifying_run_off_the_event_loop_thread(monkeypatch):
    seen: list[int] = []
    real_hash, real_verify = passwords.hash_password, passwords.verify_password

    def spy_hash(password):
        seen.append(threading.get_ident())
        return real_hash(password)

    def spy_verify(password, stored):
        seen.append(threading.get_ident())
        return real_verify(password, stored)

    monkeypatch.setattr(passwords, "hash_password", spy_hash)
    monkeypatch.setattr(passwords, "verify_password", spy_verify)
    stored, other = await asyncio.gather(
        passwords.hash_in_worker("correct horse battery"), passwords.hash_in_worker("another one")
    )
    assert await passwords.verify_in_worker("correct horse battery", stored)
    assert not await passwords.verify_in_worker("correct horse battery", other)
    loop_thread = threading.get_ident()
    assert len(seen) == 4 and loop_thread not in seen
