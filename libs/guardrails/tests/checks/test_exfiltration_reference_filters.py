"""The secrets scanner's agreement with CredSweeper's deterministic rules: command-line flag names (and more), SQL
statements around IDENTIFIED BY, numbers as values, lines of encoded data, Salesforce ids that are hex numbers,
and 15-character base36 app secrets."""

from __future__ import annotations

import base64

import pytest

from stockade.guardrails.checks.exfiltration.context import context_candidates
from stockade.guardrails.checks.exfiltration.secrets import SecretScanner

SCANNER = SecretScanner(use_detect_secrets=False)


def _found(text: str, rule: str | None = None) -> list[str]:
    return [text[h.start : h.end] for h in SCANNER.scan(text) if rule is None or h.rule == rule]


@pytest.mark.parametrize(
    "text",
    [
        "deploy --password Xk9mQ2vLp7w",
        "deploy -password 'Xk9mQ2vLp7w'",
        "openssl pkcs12 -passout pass:Xk9mQ2vLp7w -in k.p12",
        "gh auth login --token Zq8mKd3RtWp5Lx2NvB7cQ4hJ",
        "az login --client-secret Zq8mKd3RtWp5Lx2NvB7cQ4hJ",
        # beyond CredSweeper's CMD flag names (its labels never hold them; a leaked key is leaked all the same)
        "--user master --pass Xk9mQ2vLp7w",
        "tool --passwd Xk9mQ2vLp7w",
        "tool -pwd Xk9mQ2vLp7w",
        "tool --api-key Zq8mKd3RtWp5Lx2NvB7cQ4hJ",
    ],
)
def test_command_line_credential_flags_are_found(text: str) -> None:
    assert any(v in text for v in _found(text, "credential_in_context"))


def test_a_flag_that_only_ends_in_pass_is_not_a_password_flag() -> None:
    assert _found("proxy --bypass Xk9mQ2vLp7w", "credential_in_context") == []


def test_identified_by_needs_a_user_statement() -> None:
    assert _found("CREATE USER app IDENTIFIED BY 'Tq7#pLm2Zx';") == ["Tq7#pLm2Zx"]
    assert _found("ALTER USER 'u'@'%' identified by 'Tq7#pLm2Zx';") == ["Tq7#pLm2Zx"]
    assert _found("GRANT ALL ON db.* TO 'u'@'%' IDENTIFIED BY 'Tq7#pLm2Zx';") == ["Tq7#pLm2Zx"]
    # prose: the input is identified by its field name
    assert _found("The pending input is identified by `required_input`.") == []


@pytest.mark.parametrize("value", ["3f9c2d1e8b7a", "0x3f9c2d1e8b7a", "9274618350", "927461835ul"])
def test_numbers_are_not_passwords(value: str) -> None:
    assert _found(f'password = "{value}"') == []


def test_a_long_hex_value_is_still_a_secret() -> None:
    value = "5f4dcc3b5aa765d61d8327deb882cf99"  # 32 hex digits: a key, not a number constant
    assert value in _found(f'api_secret = "{value}"')


def _uue_block(middle: str) -> str:
    filler = "M" + "".join(chr(33 + (i * 7) % 64) for i in range(60))
    assert len(middle) == 61 and middle.startswith("M")
    return "\n".join([filler, middle, filler])


def test_uuencoded_lines_are_not_credentials() -> None:
    middle = "M[@%]PW:2Z.Q?2M^S;`4G?E0C.@V&?0KY]]H3Y@6$#I4V*R^+B,2P6`A)ULQ1"
    assert len(middle) == 61
    assert _found(_uue_block(middle), "credential_in_context") == []
    # the same text on its own line is a pair again
    assert _found(middle, "credential_in_context") != []


def test_git_binary_patch_lines_are_not_credentials() -> None:
    body = "Token=Xk9mQ2vLp7wZq8mKd3RtWp5Lx2NvB7cQ4hJ7f3kQ9zW2"  # 50 base85 characters: 40 bytes
    assert len(base64.b85decode(body)) == 40

    def accepted(line: str) -> list[bool]:
        return [c.accepted for c in context_candidates(line, entropy_threshold=3.5, min_length=12)]

    assert accepted("n" + body) == [False]  # 'n' announces 40 bytes: a line of a git binary patch
    assert accepted("m" + body) == [True]  # 'm' announces 39: not one


def test_salesforce_org_ids_that_are_hex_numbers_are_dropped() -> None:
    assert _found("org 00D0A53429897F6EA5", "salesforce_org_id") == []
    assert _found("org 00DFT5H59PHLAN0IA", "salesforce_org_id") == ["00DFT5H59PHLAN0IA"]


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("var app_unique_val = 'k7xq2mzv9tdbw4r';", True),
        ("hooks = 'initf90modhooks'", False),  # pronounceable: a name
        ("x = 'qwzrtkvbnmxcplj'", False),  # no digit
        ("x = 'a3f9c2d1e8b7a6c'", False),  # a hex number
        ("x = 'k7xq2mzv9tdbw4rr5'", False),  # 17 characters
        ("x = 'kkkk2mzv9tdbw4r'", False),  # a run: made up
    ],
)
def test_base36_app_secrets(text: str, found: bool) -> None:
    assert bool(_found(text, "base36_app_secret")) is found


@pytest.mark.parametrize(
    "text",
    [
        "key = _stream_id_counter",  # opens like a private name
        'password = "#{vault_password}x"',
        'secret = "{client_secret_9}"',
        "token = //comment9x",
        'password = "%s1x9Qz"',
        "flatten_with_keys_fn = _flatten_with_keys",
        'secret_key = "mysecretkey"',  # the value repeats its key
        'api_secret_key = "SECRET_KEY"',
    ],
)
def test_values_that_open_like_code_or_repeat_their_key_are_not_credentials(text: str) -> None:
    assert _found(text, "credential_in_context") == []


def test_a_value_that_differs_from_its_key_is_kept() -> None:
    assert _found('secret_key = "Xk9mQ2vLp7wZq8m"', "credential_in_context") == ["Xk9mQ2vLp7wZq8m"]
    assert _found('password = "Summer2019!"', "credential_in_context") == ["Summer2019!"]  # weak, but real
