"""Key formats taken from public rule catalogues (CredSweeper's rules, gitleaks): a realistic token of each
family is found under its rule, and a placeholder or structurally wrong value of the same family is not."""

from __future__ import annotations

import base64
import json
import zlib

import pytest

from stockade.guardrails.checks.exfiltration.secrets import SecretScanner

SCANNER = SecretScanner(use_detect_secrets=False)


def _rules(text: str) -> set[str]:
    return {h.rule for h in SCANNER.scan(text)}


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("HEROKU_API_KEY=HRKU-RHtUVQcDMpg0TMkxpdzPaEMM1ZA7V0FhHVJWDBt2hWdQZUm14QhoxhLPAbQc", "heroku_token"),
        (
            "token: ghs_38152_eyJEFUV2fsjGHb6HrlEOS47WgjKCu-0xxKhg5QjWV1m.KaUyvBPs0jSO2Jkf08MMF1ulMMCw3X."
            "Vy27dFanUrOSE62chn4xdeJg1Kza5K",
            "github_app_installation_token",
        ),
        (
            "llZq3ZycZOkN8gaW18vjsgJ0Wu8FxTwXqxni7z9KwRkNr4aE28uzJQQJ995eRTpPWzUB4q60sskDI1EDL0Y6AzSt",
            "azure_storage_account_key",
        ),
        (
            "Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=Root;"
            "SharedAccessKey=TPNbpjava1bMZwIMlvdp5gjTrD8Osj/LnZ5R+j/8U/m=",
            "azure_shared_access_key",
        ),
        (
            "https://acme.blob.core.windows.net/c/f.csv?sv=2021-06-08&sr=b&sp=r"
            "&sig=KLDL36awmUDt8QvwTH6Iuj2OkDCJ23VmCwykTp4Eils%3D",
            "azure_sas_signature",
        ),
        ("appid = wx0641e1f037860cf2", "wechat_app_id"),
        ("LLAMA_API_KEY=llx-MR4pAwBp3GVy1PixOqoRGrB5Vpg5C6QsyHZytfqY6K1Qjah4", "llama_key"),
        ("PMAT-BY89B61CUA0ZBB5A2ODUPCIVDM", "postman_key"),
        ("shptka_e81c1aad236d31def0b9d2993134b65a", "shopify_token"),
        ("b3adf32b1cc8fa650bdf6593d1b61b4b-171b2f3a-9f889eea", "mailgun_key"),
        ("sid CAf77ee09a4496e0ed7afceaa86dc3f346", "twilio_key"),
        ("sk-4849a845d1f7c3a0579f09222a2bed27a584d21b54fa8973", "deepseek_key"),
        ("sk-proj-gYrZJd6F58LKideRuauiFtEvGjfLg19wZW5BSgJk7bwKGfGhgs870XhRQXdNWOAvlhF", "openai_key"),
        ("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", "groq_key"),
        ("hf_QbLJmWZTsUryrgsVJN8OLJtqCdpa0WI2Kk", "huggingface_token"),
        (
            "sl.u.UVDPDR-m0k5iqkwUONAIifEcLav_q5ZvQmLL8ZrF8w50SR2Qugs4lIFVRdxtDyKUOtfZUTqr8aFvnKbnHFbDfj3u_"
            "ypO09RnKw1zW9-ohP46PbmT1TOkzfR1",
            "dropbox_token",
        ),
        ("318529047613|wKbPXTXx8TTx4XUMGmTtfc6y_x", "facebook_app_token"),
        ("A3TXR12TWS1LMCTD27FR", "aws_access_key_id"),
        ("ntn_619781914rWO9BzG9db057ANuHlwF5SEvPMZUIKK6Q4O5W3zC", "notion_token"),
        ("sk.eyJ1IjoiYWNtZS1tYXBzIiwiYSI6ImNsN3g5In0.-3BMDogiSTRIiP9LJm7R04", "mapbox_secret_token"),
        ("pul-c108b08c3ce052e96819b8ac3e6dfeb63cc17fd0", "pulumi_token"),
        ("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", "langsmith_key"),
        ("r8_U1ziGrWzY786O6ax82ZsTSYNSN7Gauc6nxICZ", "replicate_token"),
        ("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", "openrouter_key"),
        ("pat-na1-0f256ae9-3e83-b3e4-cf56-39700bc518c0", "hubspot_token"),
        ("LTAIdioUgImdhCEImzQf6CKb\nsecret=D5FqWfX9MwHOQ62LdIl6GFzim1oLEC", "alibaba_access_key_secret"),
        # base64 DER private keys: PKCS#8 and PKCS#1 headers
        (
            '"key": "MIICdwIBADANBgkqhkiG9w0BAQEFAASCAmEwggJdAgEAAoGBANueDn4f5ut5oYJu"',
            "base64_der_private_key",
        ),
        ("MIICXQIBAAKBgQDTGQ4npr/BbJHzlj08thoBDK6R6TydKyXq32QcMd9L/Bycuc8k", "base64_der_private_key"),
        ("redis://:Xk9mQ2vLp7wZ@cache.internal:6379/0", "url_credentials"),
        ("CCIPAT_MvFvbYVVVxNhBiv619GtHd_ab53223aff2a6acd7df660a275c8a5b72b471011", "circleci_token"),
        # a private key whose body follows escaped newlines and string joins, or log prefixes
        (
            '"-----BEGIN PRIVATE KEY-----\\\\n"\n + "MIIBVAIBADANBgkqhkiG9w0BAQEFAASCAT4wggE6AgEA"',
            "private_key",
        ),
        (
            "-----BEGIN PRIVATE KEY-----\n2026-04-26 12:36:01 MIIMvgIBADALBglghkgBZQMEBAMEggyqMIIMpgRA",
            "private_key",
        ),
        # a UUID under a credential-like name, or after key= in a URL, stays a finding
        ('"UserKeyword": "A1328E04-88B6-4E2A-A5C0-A4D9B21754C4"', "uuid"),
        ("COMPOSIO_API_KEY=ak_ppda4WEZA4P9k42oYRQD", "composio_key"),
        ("SK4df23ae2a108ce72ff48e1984ac352e3", "twilio_key"),
    ],
)
def test_catalogue_formats_are_found(text: str, rule: str) -> None:
    assert rule in _rules(text)


def test_grafana_key_is_base64_json_with_key_name_and_org() -> None:
    key = base64.b64encode(json.dumps({"k": "Zq8mKd3RtWp5Lx2NvB7cQ4hJ", "n": "deploy", "id": 1}).encode())
    assert "grafana_provisioned_key" in _rules(f"GF_KEY={key.decode()}")
    other = base64.b64encode(json.dumps({"name": "deploy", "role": "Viewer", "created": 1716}).encode())
    assert "grafana_provisioned_key" not in _rules(f"payload={other.decode()}")


@pytest.mark.parametrize(
    "text",
    [
        "HRKU-" + "x" * 60,  # a placeholder run
        "llx-" + "0" * 48,
        "shptka_" + "0123456789abcdef" * 2,  # a sequence
        "PMAT-XXXXXXXXXXXXXXXXXXXXXXXXXX",
        "sk-or-v1-" + "a" * 64,
        # base64 DER that is a certificate / a public key / encrypted PKCS#8, not a private key
        "MIIDdzCCAl+gAwIBAgIEbV5Xq2AwDQYJKoZIhvcNAQELBQAwbDEQMA4GA1UEBhMH",
        "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA1c7+9z5Pad7OejecsQ0b",
        "MIIFHzBJBgkqhkiG9w0BBQ0wPDAbBgkqhkiG9w0BBQwwDgQI3Pq8AJ6BmmMCAggA",
        # shapes the providers never issue: mixed-case hex, upper case in Mailgun's key, names behind ak_,
        # a hand-made webhook path, an upper-case Google client id
        "SK4df23ae2a108ce72ff48e1984AC352e3",
        "key-01tFV84CdKU95USNy977sDU0FoTkqXyQ",
        "uak_mock_toolkits_info",
        "https://hooks.slack.com/services/T_GIREOGI/B_FLYING_/Slack1webhook2teststring",
        "656536-sZJdGtlqeD1se0G1F1RpoMsdf3pK19d0.apps.googleusercontent.com",
        # a private-key header with no key after it (a constant in code that parses keys)
        '_SK_START = b"-----BEGIN OPENSSH PRIVATE KEY-----"\n_SK_END = b"-----END OPENSSH PRIVATE KEY-----"',
        # UUIDs that name a resource: under an id name, in a URL's path
        '"RequestId": "a1b2c3d4-0e5f-4a6b-9c8d-7e6f5a4b3c2d",',
        "subscription_id = a1b2c3d4-0e5f-4a6b-9c8d-7e6f5a4b3c2d",
        "<Id>a1b2c3d4-0e5f-4a6b-9c8d-7e6f5a4b3c2d</Id>",
        "https://user-images.example.com/1/222815509-374f3400-f83d-4f7d-8fa6-4a092b3250bb.png",
        # a URL's password written as its field name or a documentation stand-in
        "mysql+pymysql://user:pass@some_mariadb/dbname",
        "smb://myuser:mypassword@myserver.com/share",
        'create_engine("oracle+oracledb://scott:tiger@localhost")',
        "https://jo%40email.com:a%20secret@www.example.com",
    ],
)
def test_catalogue_placeholders_and_non_keys_are_not_found(text: str) -> None:
    assert _rules(text) == set()


def test_encrypted_pem_body_is_not_a_key() -> None:
    pem = (
        "-----BEGIN PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: DES-EDE3-CBC,0421B854034C0260\n\n"
        "MIICdwIBADANBgkqhkiG9w0BAQEFAASCAmEwggJdAgEAAoGBANueDn4f5ut5oYJu\n-----END PRIVATE KEY-----\n"
    )
    assert _rules(pem) == set()


def test_prefilter_literals_belong_to_their_formats() -> None:
    from stockade.guardrails.checks.exfiltration.formats import FORMATS

    for f in FORMATS:
        source = f.pattern.pattern.replace("\\", "").lower()  # (?i:basic) holds both asic and ASIC
        assert all(literal.replace("\\", "").lower() in source for literal in f.literals), f.name


@pytest.mark.parametrize("prefix", [b"", b"a", b"ab", b"tls:\n  key: |\n    "])
def test_base64_pem_private_key_is_found_at_any_alignment(prefix: bytes) -> None:
    pem = b"-----BEGIN RSA PRIVATE KEY-----\nMIICXQIBAAKBgQDTGQ4npr/BbJHzlj08thoBDK6R6TydKyXq32QcMd9L\n"
    assert "base64_private_key" in _rules(base64.b64encode(prefix + pem).decode())
    cert = b"-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEbV5Xq2AwDQYJKoZIhvcNAQELBQAw\n"
    assert "base64_private_key" not in _rules(base64.b64encode(prefix + cert).decode())


@pytest.mark.parametrize(
    "text",
    [
        "AKIALGSBKLIKEAREAL12",  # an AWS key id shape spelled with words
        "SWMTKN-1-7here4ar3not7he7oken5you4re1ooking4or1samplingonly-nh7cr8ap4o4fl58ektr42c8ek",
        'api_token = "ThisIsMyTestTokenValue"',
    ],
)
def test_tokens_made_of_words_are_stand_ins(text: str) -> None:
    assert _rules(text) == set()


def test_word_filter_keeps_random_tokens_and_hex_words_in_uuids() -> None:
    from stockade.guardrails.checks.exfiltration.words import word_count, wordy

    assert word_count("password") == 1  # longest word first: not pass + word
    assert not wordy("Zq8mKd3RtWp5Lx2NvB7cQ4hJ") and wordy("HelloWorldExample")
    assert "uuid" in _rules("id 17205d79-dead-beef-a311-26312ad6ea36")  # generated: hex words are chance


# Checksums and structures the issuers build into their tokens: a value of the right shape that fails them was
# never issued (a hand-typed example, an altered copy), so the format rule does not report it.
_B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def _crc_b62(body: str) -> str:
    n, out = zlib.crc32(body.encode()), ""
    while n:
        n, r = divmod(n, 62)
        out = _B62[r] + out
    return out.rjust(6, "0")


def _altered(token: str) -> str:
    return token[:-1] + ("A" if token[-1] != "A" else "B")


@pytest.mark.parametrize(("prefix", "rule"), [("ghp_", "github_token"), ("npm_", "npm_token")])
def test_github_and_npm_tokens_must_carry_their_crc32(prefix: str, rule: str) -> None:
    body = "Tq4Wz8Lm2Xc7Vb1Nk5Hj9Gf3Ds6Ap0"
    token = prefix + body + _crc_b62(body)
    assert rule in _rules(f"export X={token}")
    assert rule not in _rules(f"export X={_altered(token)}")
    # under a credential name the altered value is still judged as a value in that context
    assert _rules(f'token = "{_altered(token)}"') == {"credential_in_context"}


def test_atlassian_tokens_must_carry_their_crc32() -> None:
    head = (
        "ATATT3xFfGF0"
        + "Zq8mKd3RtWp5Lx2NvB7cY4hJ9sF1gA6eQ0uI3oP8rT5yU2wE7nM4bV1cX6zL9kH3jD0fG5sA8qW2eR7tY4uI1oP6"
        + "="
    )
    token = head + format(zlib.crc32(head.encode()), "08X")
    assert "atlassian_token" in _rules(f"JIRA {token}")
    assert "atlassian_token" not in _rules(f"JIRA {_altered(token)}")
    assert "atlassian_token" in _rules(f"JIRA {head[:-1]}\\\\=00C0FFEE")  # cut at an escaped '=': cannot tell


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def test_a_jwt_needs_a_jose_header_a_json_payload_and_a_random_signature() -> None:
    header, payload = _b64url(b'{"alg":"HS256","typ":"JWT"}'), _b64url(b'{"sub":"42","iat":1700000000}')
    signature = _b64url(bytes(range(200, 232)))
    assert "jwt" in _rules(f"{header}.{payload}.{signature}")
    assert "jwt" not in _rules(f"{header}.{payload}.{_b64url(b'this-is-the-signature-part')}")  # typed
    not_jose = _b64url(b'{"name":"bob","age":42}')
    assert "jwt" not in _rules(f"{not_jose}.{payload}.{signature}")


def test_discord_bitbucket_and_jfrog_tokens_decode_to_their_structure() -> None:
    bot_id = base64.b64encode(b"812345678901234567").decode().rstrip("=")
    assert "discord_bot_token" in _rules(f"{bot_id}.GkLm3P.Zq8mKd3RtWp5Lx2NvB7cY4hJ9sF1gA6eQ0uI3o")
    not_id = base64.b64encode(b"4abcdefghijklmnopq").decode().rstrip("=")  # the same shape, letters inside
    assert not_id[0] in "MNO" and len(not_id) == len(bot_id)
    assert "discord_bot_token" not in _rules(f"{not_id}.GkLm3P.Zq8mKd3RtWp5Lx2NvB7cY4hJ9sF1gA6eQ0uI3o")
    bbdc = "BBDC-" + base64.b64encode(b"482910375561:" + bytes(range(90, 110))).decode()
    assert "bitbucket_dc_token" in _rules(bbdc)
    assert "bitbucket_dc_token" not in _rules(
        "BBDC-" + base64.b64encode(b"Bitbucket token goes here ok").decode()
    )
    random_part = "".join(_B58[(i * 37 + 11) % 58] for i in range(69))
    akcp = "AKCp" + random_part  # 73 base58 characters: 54 bytes, as JFrog API keys are
    assert "jfrog_token" in _rules(f"X-JFrog-Art-Api: {akcp}")
    assert "jfrog_token" not in _rules(f"X-JFrog-Art-Api: {akcp[:64]}")  # 64 characters: 47 bytes
    reftkn = base64.b64encode(b"reftkn:01:1893456000:" + b"Zq8mKd3RtWp5Lx2NvB7cY4hJ9sF1gA6").decode()
    assert "jfrog_token" in _rules(f"jfrog {reftkn}")
    assert "jfrog_token" not in _rules(
        "jfrog " + base64.b64encode(b"reftkn is not here at all ok right?").decode()
    )
