"""Values written in place of real credentials are not reported: password-words with digits, elided values,
module paths and format strings under credential names, URL passwords that repeat the user or are templates,
UUIDs that end a resource name, hand-typed interleaved runs, and PEM headers over a body that is not a key. Each
case was found by comparing the scanner with CredSweeper 1.19.5 (the labeller of the evaluation data) on other
scanners' fixtures, installed-package files and newer CredSweeper samples, never on the evaluation's test split."""

from __future__ import annotations

import base64

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519

from stockade.guardrails.checks.exfiltration.policy import SecretsPolicy
from stockade.guardrails.checks.exfiltration.secrets import SecretScanner

SCANNER = SecretScanner(use_detect_secrets=False)
# weak passwords (password123) taken for documentation stand-ins, as CredSweeper's model takes them
DOCS_POLICY = SecretsPolicy(report_weak_passwords=False)
DOCS_SCANNER = SecretScanner(use_detect_secrets=False, policy=DOCS_POLICY)
UUID = "423b998d-eba9-40dd-8e19-96c5b6e5f31d"


def _found(text: str, rule: str | None = None) -> list[str]:
    return [text[h.start : h.end] for h in SCANNER.scan(text) if rule is None or h.rule == rule]


@pytest.mark.parametrize(
    "value",
    [
        "password123",
        "Password123!",
        "secret123",
        "supersecret123",
        "pwd123",
        "mypass123",
        "admin2024",
        "changeit1",
        "DbPass2024",
        "hardcoded0",
    ],
)
def test_password_words_with_digits_are_weak_passwords_by_policy(value: str) -> None:
    text = f'db_password = "{value}"'
    assert _found(text) == [value]  # the default: a user's config holding a weak password is a finding
    report = DOCS_SCANNER.report(text)
    assert report.hits == [] and report.veto_counts["weak_password"] == 1


def test_interleaved_runs_are_typed_by_hand_in_a_credential_context() -> None:
    assert _found("authToken: '9f8e7d6c5b4a39281706f5e4d3c2b1a0',") == []
    assert _found('api_secret = "a1b2c3d4e5f6g7h8i9j0"') == []
    # a known format keeps its own judgement (CredSweeper reports SG.a1B2c3D4... as a SendGrid key)
    key = "SG.a1B2c3D4e5F6g7H8i9J0.kL1mN2oP3qR4sT5uV6wX7yZ8aB9cD0eF1gH2iJ3kL"
    assert key in _found(f"sendgrid: '{key}'")


@pytest.mark.parametrize("value", ["Summer2019!", "tiger123", "dkajco1", "Xk9mQ2vLp7w"])
def test_other_short_passwords_are_still_found(value: str) -> None:
    assert _found(f'db_password = "{value}"', "credential_in_context") == [value]


@pytest.mark.parametrize(
    "text",
    [
        '"PurchaseToken": "eyJ2IjoiMSIsInMiOjEsImMiOi...",',  # elided in an example
        'api_token = "Zq8mKd3RtWp5Lx2N…"',
        'torch._C._log_api_usage_once("torch._dynamo.optimize")',  # a module path
        '_BODY_LIMIT_SCOPE_KEY = "starlette._body_limit_responder"',
        '"cross_past_key_names": "past_key_cross_%d",',  # a format string
        '"ModalityTokensTypedDict": ".modalitytokens",',  # opens like a file or attribute name
        "PGPASSFILE = '.pgpass'",  # the file that holds the password, not the password
        "selection_loss_per_token = -dist_per_token.log_prob(labels)",  # an expression
        '#define STATS_KEY_MAX_VALUE_EXACT "ARROW:max_value:exact"',  # names joined by ':'
    ],
)
def test_names_paths_and_formats_under_credential_names_are_not_values(text: str) -> None:
    assert _found(text) == []


@pytest.mark.parametrize(
    "url",
    [
        "http://someone:someone@my.cluster.local/v1/",  # the user repeated
        "http://username:whywouldyouusehttpforpasswords@example.com",  # words
        "s3://{access_key}:{secret_key}@mybucket/data.parquet",  # a template
        "s3://my_key:my_secret@my_bucket/my_key",  # variable names
    ],
)
def test_url_passwords_that_stand_in_are_not_reported(url: str) -> None:
    assert _found(f'uri = "{url}"') == []


def test_a_weak_url_password_is_reported_unless_the_policy_says_stand_in() -> None:
    text = 'uri = "mysql://root:password123@localhost:3306/mydb"'
    assert "password123" in _found(text)
    assert [text[h.start : h.end] for h in DOCS_SCANNER.scan(text)] == []


def test_detect_secrets_basic_auth_plugin_drops_the_same_stand_ins() -> None:
    scanner = SecretScanner(policy=DOCS_POLICY)  # with the detect-secrets plugins
    for url in ("mysql://root:password123@localhost/db", "s3://my_key:my_secret@my_bucket/my_key"):
        assert scanner.scan(f'uri = "{url}"') == []
    assert SecretScanner().scan('uri = "s3://my_key:my_secret@my_bucket/my_key"') == []
    assert [h.rule for h in scanner.scan('uri = "mysql://root:Xk9mQ2vLp7wZ@db.internal/db"')]


def test_a_real_url_password_is_reported() -> None:
    assert _found('uri = "postgres://app:Xk9mQ2vLp7wZ@db.internal:5432/app"', "url_credentials") == [
        "Xk9mQ2vLp7wZ"
    ]


def test_a_uuid_ending_a_resource_name_is_not_a_key() -> None:
    assert _found(f'"id": "create-db-cluster-{UUID}",') == []
    assert _found(f'"Location": "s3://bucket/snapshots/my-layer-{UUID}?versionId=1"', "uuid") == []
    assert _found('api_key = "123e4567-e89b-12d3-a456-426614174000"') == []  # the RFC 4122 example
    # a short prefix may be a key's own (sk-lf-...), and a UUID given as a value stays reported
    assert _found(f"Authorization header sk-lf-{UUID} was sent", "uuid") == [UUID]
    assert _found(f"the shared key is {UUID}", "uuid") == [UUID]
    assert any(UUID in v for v in _found(f'token = "sk-lf-{UUID}"'))


def _pem(key: object, fmt: serialization.PrivateFormat) -> str:
    return key.private_bytes(  # type: ignore[attr-defined]
        serialization.Encoding.PEM, fmt, serialization.NoEncryption()
    ).decode()


@pytest.mark.parametrize(
    ("key", "fmt"),
    [
        (ec.generate_private_key(ec.SECP256R1()), serialization.PrivateFormat.PKCS8),
        (ec.generate_private_key(ec.SECP256R1()), serialization.PrivateFormat.TraditionalOpenSSL),
        (ed25519.Ed25519PrivateKey.generate(), serialization.PrivateFormat.OpenSSH),
    ],
    ids=["pkcs8", "sec1", "openssh"],
)
def test_generated_private_keys_are_found_also_escaped_in_json(
    key: object, fmt: serialization.PrivateFormat
) -> None:
    pem = _pem(key, fmt)
    assert "private_key" in {h.rule for h in SCANNER.scan(pem)}
    escaped = '{"key": "' + pem.replace("\n", "\\n") + '"}'
    assert "private_key" in {h.rule for h in SCANNER.scan(escaped)}


def test_a_key_cut_short_before_its_end_line_is_still_found() -> None:
    pem = _pem(ec.generate_private_key(ec.SECP256R1()), serialization.PrivateFormat.PKCS8)
    assert "private_key" in {h.rule for h in SCANNER.scan(pem[: len(pem) // 2])}  # output stopped mid-key


@pytest.mark.parametrize("kind", ["RSA ", "EC ", "", "OPENSSH "])
def test_a_header_over_a_body_that_is_not_a_key_is_not_reported(kind: str) -> None:
    fragment = base64.b64encode(bytes(range(7, 59))).decode()  # 52 bytes: no ASN.1 key, no openssh-key-v1
    text = f'"k": "-----BEGIN {kind}PRIVATE KEY-----\\n{fragment}\\n-----END {kind}PRIVATE KEY-----"'
    assert "private_key" not in {h.rule for h in SCANNER.scan(text)}


@pytest.mark.parametrize(
    "text",
    [
        '"PasswordLastUsed": "2016-09-08T21:47:36Z",',  # a time stamp
        "zoneinfo.ZoneInfo(key='America/Los_Angeles')",  # a time-zone name
        'tz = dateutil.tz.tzfile(data, key="Etc/GMT+5")',
        'dispatch_key = "c10::computeDispatchKey(dtype, layout, device)"',  # code in a string
        '"result_key": "DBRecommendations"',  # a PascalCase name with an acronym
        '"result_key": "HsmConfigurations"',
        "api_key: Explicitly-provided API key, or None if not set by the caller.",  # prose
        'secret: "development#product"',  # words joined by '#'
        "the result set pass `evaluate=True` to give L - R;",  # markup
        "Authorization: AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20220524/us-east-1/s3/aws4_request, Signed",
        '"/account/creating-a-strong-password":"/en/enterprise-server@3.0/auth"',  # a URL path
        "put '/forgot-password' => \"cms/sites/passwords#update\"",  # a route
        "FORGOT_PASSWORD=$REACT_APP_BASE_URL/classroom/#/forgot_password",  # a variable and a path
        'AUTH0_DOMAIN="dev-r0alk1x87r7luw3z.us.auth0.com"',  # a key that names a host
        '# set column.key = "attr_<lower_case_name>"',  # a template
        "'PowerShellSessionLexer': ('pygments.lexers.shell', ('pwsh-session', 'ps1con'), ()),",  # pw in a word
        '"Location": "https://amzn-s3-demo-bucket.s3.us-west-2.amazonaws.com/"',  # AWS's documentation bucket
    ],
)
def test_time_stamps_names_paths_and_prose_under_credential_names_are_not_values(text: str) -> None:
    assert _found(text) == []


@pytest.mark.parametrize(
    "text",
    [
        '"Password": "SomeKindOfPassword123!@#",',  # the word Password among words
        '"LocalConsolePassword": "PassWordMustBeAtLeast6Chars."',
    ],
)
def test_the_word_password_among_words_is_a_stand_in_only_by_policy(text: str) -> None:
    assert _found(text) != []
    assert DOCS_SCANNER.scan(text) == []


@pytest.mark.parametrize(
    "text",
    [
        "Authorization: Bearer mF_9.B5f-4.1JqM",  # RFC 6750's example bearer token
        '{"access_token":"2YotnFZFEjr1zCsicMWpAA","refresh_token":"tGzv3JOkF0XG5Qx2TlKWIA"}',  # RFC 6749's
        "client_secret=7Fjfp0ZBr1KtDRbnfVdmIw",
    ],
)
def test_the_example_tokens_of_the_oauth_rfcs_are_documentation(text: str) -> None:
    assert _found(text) == []


@pytest.mark.parametrize(
    "value", ["QmZpRtLwVbNcXkJhGfDs", "aB3dE5fG7hJ9kL1mN3pQ", "Xk9mQ2vLp7wZ-rT4", "SecretSauce-Kq7W2x9Z"]
)
def test_random_keys_under_credential_names_are_still_found(value: str) -> None:
    assert _found(f'api_key = "{value}"', "credential_in_context") == [value]
    assert _found(f'config = ("api_key", "{value}")', "credential_in_context") == [value]


def test_a_uuid_given_as_an_id_in_braces_or_behind_a_short_prefix_is_not_a_key() -> None:
    assert _found('<ds:datastoreItem ds:itemID="{EF278816-EC6F-A645-907D-7F25AECB1D4A}">') == []
    assert _found(f"'id': 'run-{UUID}',") == []
    assert _found(f'"api_key": "{UUID}"') == [UUID]  # under a key's name it stays a possible key


def test_a_jws_with_detached_content_is_not_a_token_but_a_jwe_or_a_full_jws_is() -> None:
    header = base64.urlsafe_b64encode(b'{"alg":"HS256"}').decode().rstrip("=")
    payload = base64.urlsafe_b64encode(b'{"sub":"1234567890","admin":true}').decode().rstrip("=")
    signature = "UYmO_lPAY5V0Wf4KZsfhiYs1SxqXPhxvjuYqellDV5A"
    assert _found(f"sig = '{header}..{signature}'") == []
    assert _found(f"sent {header}.{payload}.{signature} along")  # reported (as a JWT)
    jwe = base64.urlsafe_b64encode(b'{"alg":"dir","enc":"A256GCM"}').decode().rstrip("=")
    body = "48V1_ALb6US04U3b.5eym8TW_c8SuK0ltJ3rpYIzOeDQz7TALvtu6UG9oMo4vpzs.XFBoMYUZodetZdvTiFvSkQ"
    assert _found(f"sent {jwe}..{body} along", "jose_token")


def test_base64_of_a_pem_header_alone_is_not_a_key() -> None:
    for kind in ("RSA ", "EC ", ""):
        header = base64.b64encode(f"-----BEGIN {kind}PRIVATE KEY-----".encode()).decode()
        assert _found(f"| {header}   (?# prefix of the base64 of a key header)", "base64_private_key") == []
    pem = _pem(ec.generate_private_key(ec.SECP256R1()), serialization.PrivateFormat.PKCS8)
    assert _found(base64.b64encode(pem.encode()).decode(), "base64_private_key")


def test_an_alphabet_under_a_credential_name_is_not_a_key_and_is_judged_at_once() -> None:
    # a run of the alphabet is made up; this value once sent a password-word pattern into exponential
    # backtracking, so the scan would not return
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    assert _found(f'SALT_CHARS = "{alphabet}"') == []
    assert _found(f'DB_PASSWORD = "Pass{"1" * 200}x"') == []  # a run of ones


def test_a_key_id_on_a_line_that_calls_it_an_example_is_an_illustration() -> None:
    key_id = "AKIA2E0A8F3B244C9986"
    assert _found(f"keys look like {key_id} (for example)") == []
    assert _found(f"# Example: {key_id}") == []
    assert key_id in _found(f"aws_access_key_id = {key_id}")  # without the word, reported


@pytest.mark.parametrize(
    ("value", "fake"),
    [
        ("4ian1234", True),  # 8-15 characters: a run of 4 is chance only once in hundreds of values
        ("Zq8mKd3Rtaaaa", True),
        ("Zq8mKd3RtWp5Lx2N", False),
        ("Zq8mKd3RtWp5Lx2NvB7cQ4hJ1234Rw", False),  # 30 characters: a run of 4 is allowed, 5 is not
        ("Zq8mKd3RtWp5Lx2NvB7cQ4hJ12345w", True),
        ("Zq8mKd3RtWp5Lx2NvB7cQ4hJ9sF1gA6eQ0uI3oP8rT5yU2wE7nM4bV1cX6zL9kH3jD0fG5sA8qW2eR7tY4u12345z", False),
    ],
)
def test_pattern_runs_are_judged_by_the_length_of_the_value(value: str, fake: bool) -> None:
    from stockade.guardrails.checks.exfiltration.plausibility import looks_fake

    assert looks_fake(value) is fake


def test_a_google_client_id_alone_is_public_and_is_reported_with_its_secret() -> None:
    client = "417302958816-k3v9q2m7x1b8n4c6z0w5r2t8y7u3p1aa.apps.googleusercontent.com"
    assert _found(f'<meta name="google-signin-client_id" content="{client}">') == []
    paired = _found(
        f'GOOGLE_CLIENT_ID="{client}"\n\nGOOGLE_CLIENT_SECRET="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"'
    )
    assert client in paired and "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" in paired


@pytest.mark.timeout(60)  # a hang guard, not a speed figure: each text takes well under a second
@pytest.mark.parametrize(
    "text",
    [
        'password = "' + "Pass" * 50_000 + '"',  # took 79 s at 100 kB while name patterns were unbounded
        "api_key_" * 25_000,
        "<add" + ' key="password" ' * 12_000,
        "mysql -u x " * 18_000,
        "curl a " * 28_000,
        '("password", ' * 15_000,
        'PASSWORD = os.environ.get("' * 7_000,
    ],
    ids=["password-word-run", "key-name-run", "open-tag", "mysql-line", "curl-line", "tuples", "getenv"],
)
def test_long_adversarial_outputs_are_scanned_in_one_pass(text: str) -> None:
    # a model's output can be long and repetitive: every context pattern bounds its name and gap lengths, so
    # the scan is linear and a repeated credential word cannot stall the output check
    assert _found(text) == []
