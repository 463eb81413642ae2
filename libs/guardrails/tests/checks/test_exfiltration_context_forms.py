"""Credentials found by their context across languages and config formats, and code or descriptions next to
credential words that are not credentials."""

from __future__ import annotations

import pytest

from stockade.guardrails.checks.exfiltration.secrets import SecretScanner

SCANNER = SecretScanner(use_detect_secrets=False)


def _values(text: str) -> list[str]:
    return [text[h.start : h.end] for h in SCANNER.scan(text) if h.rule == "credential_in_context"]


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('let password: string = "cackle!9";', "cackle!9"),  # a typed declaration
        ('let password: &\'static str = "cackle!9";', "cackle!9"),
        ('Dim password As String = "cackle!9"', "cackle!9"),
        ('public string Password { get; set; } = "cackle!9";', "cackle!9"),
        ('password <- "cackle!9"', "cackle!9"),
        ("AUTH_TOKEN ?= Zq8mKd3RtWp5Lx2NvB7cQ4hJ", "Zq8mKd3RtWp5Lx2NvB7cQ4hJ"),
        ("PGPASSWORD=Xk9mQ2vLp7wZ psql -h db", "Xk9mQ2vLp7wZ"),  # a service joined to PASS in capitals
        ("MYSQLPASS: Ce7shE0ENPiBlEJO+EdEose0cBAA", "Ce7shE0ENPiBlEJO+EdEose0cBAA"),
        ('var password = new String("cackle!9");', "cackle!9"),
        ('password = f"cackle!9"', "cackle!9"),
        ('pswd = "cackle!9"', "cackle!9"),
        ('db_password = "hunter-2024"', "hunter-2024"),  # a word and digits: still a password
        ('config["api_key"] = "Zq8mKd3RtWp5Lx2NvB7cQ4hJ"', "Zq8mKd3RtWp5Lx2NvB7cQ4hJ"),
        ('headers = {"Authorization": "token Zq8mKd3RtWp5Lx2NvB7cQ4hJ"}', "Zq8mKd3RtWp5Lx2NvB7cQ4hJ"),
        ('{\\"password\\": \\"cackle!9\\"}', "cackle!9"),  # JSON inside a string
        ("&quot;password&quot;: &quot;cackle!9&quot;", "cackle!9"),  # HTML-escaped
        ('pass = "a;Bc3$1x"', "a;Bc3$1x"),  # a quoted value runs to its closing quote
        ('#define DB_PASSWORD "Xk9#mQ2vLp7"', "Xk9#mQ2vLp7"),
        ("ENV DB_PASSWORD Xk9mQ2vLp7w", "Xk9mQ2vLp7w"),
        ("aws configure set aws_secret_access_key Zq8mKd3RtWp5Lx2NvB7cQ4hJ", "Zq8mKd3RtWp5Lx2NvB7cQ4hJ"),
        ('os.getenv("DB_PASSWORD", "Xk9mQ2vLp7w")', "Xk9mQ2vLp7w"),
        ('System.getProperty("db.password", "Xk9mQ2vLp7w")', "Xk9mQ2vLp7w"),
        ('const key = process.env.API_TOKEN || "Zq8mKd3RtWp5Lx2NvB7cQ4hJ";', "Zq8mKd3RtWp5Lx2NvB7cQ4hJ"),
        ('user.setPassword("Xk9mQ2vLp7w");', "Xk9mQ2vLp7w"),
        ('new PasswordAuthentication("admin", "cackle!9".toCharArray())', "cackle!9"),
        ('DriverManager.getConnection(url, "admin", "cackle!9")', "cackle!9"),
        ('curl_easy_setopt(curl, CURLOPT_PASSWORD, "Xk9mQ2vLp7w");', "Xk9mQ2vLp7w"),
        ("openssl rsa -in k.pem -passin pass:Xk9mQ2vLp7", "Xk9mQ2vLp7"),
        ("mysql -uroot -pXk9mQ2vLp7w db", "Xk9mQ2vLp7w"),
        ("docker login -u deploy -p Xk9mQ2vLp7w registry.example.net", "Xk9mQ2vLp7w"),
        ("redis-cli -h cache -a Xk9mQ2vLp7w ping", "Xk9mQ2vLp7w"),
        ('<add key="ApiSecret" value="Zq8mKd3RtWp5Lx2NvB7c" />', "Zq8mKd3RtWp5Lx2NvB7c"),
        ('<entry key="db.password">Xk9#mQ2vLp7</entry>', "Xk9#mQ2vLp7"),
        (
            '<token name="t">\n    "Zq8mKd3RtWp5Lx2NvB7cQ4hJ\n    wE6tY9uI"\n</token>',
            "Zq8mKd3RtWp5Lx2NvB7cQ4hJ",
        ),  # wrapped
        ('<input type="password" value="cackle!9">', "cackle!9"),
        ("machine api.example.com login deploy password Xk9mQ2vLp7w", "Xk9mQ2vLp7w"),  # .netrc
        ('requests.get(url, auth=("deploy", "Xk9mQ2vLp7w"))', "Xk9mQ2vLp7w"),
        ('headers.append(("X-Api-Key", "Zq8mKd3RtWp5Lx2NvB7cQ4hJ"))', "Zq8mKd3RtWp5Lx2NvB7cQ4hJ"),
        ('password = "$ecret!9x"', "$ecret!9x"),  # a leading $ that is not a variable
        ('secret = "Xk9mQ2vL"', "Xk9mQ2vL"),  # short, but mixed case and digits without repeats
    ],
)
def test_credential_forms_are_found(text: str, value: str) -> None:
    assert value in _values(text)


@pytest.mark.parametrize(
    "text",
    [
        "password = getPassword()",  # a call
        "password_hash = bcrypt.hash(pw)",
        'password = request.form["password"]',  # a lookup
        'password = input("Password: ")',  # a prompt
        "if password == confirm_password:",  # a comparison with a variable
        "password: !vault |",  # a YAML tag
        'PASSWORD_REGEX = r"^(?=.*[A-Z]).{8,}$"',  # a key that describes a credential
        'token_url = "https://oauth2.googleapis.com/token"',
        'secret_name = "prod/db/credentials"',
        'key = "user:profile:cache"',  # a cache key
        "Default ID/PW are wpasp/wpasp.",  # a user name as its own password: a default
        'os.getenv("DB_PASSWORD", "")',  # no default
        "set password before login",  # prose
        "my password is 237dg546fs9",  # prose: CredSweeper's code rules do not read 'is' as a separator
        "fields = ['password', 'password_confirm']",  # field names
        'password = "$db_password"',  # a variable
        'password = "%DB_PASSWORD%"',
        "GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}",
        'secret = "Version2"',  # short and word-like
        "credit = 'Xk9mQ2vLp7wZ'",  # not a credential word
        "input_tokens_details: UsageInputTokensDetails",  # a type annotation
        '"result_key": "ComplianceByResources",',  # a name made of words
        "token_type_ids = buffered_token_type_ids_expanded",  # a variable
        'IS_SUFFICIENT_KEY = "outlier_detection_is_sufficient_batches"',  # an event or field name
        "key_prefix=_TERMINAL_STATE_SYNC_ID,",  # a constant
        "auth_tasks = [auth_operation(i) for i in range(10)]",  # code
        "DispatchKey::CompositeImplicitAutograd",  # a scope, not a separator
        '"key_sha256": "bb1636883c2707b51c5b7fc26c6927af4430f2e0785a8c7bc886337f919f9edf"',  # a digest
        '"Idempotency-Key": f"stainless-python-retry-{uuid4()}",',  # a template
        '"S3Key": "my-app/22a0-stage-150819_185942.war"',  # a path
        "<password>\n    Enter the password for authorization here\n</password>",  # a description in XML
        "<token>\n    <value>Zq8mKd3RtWp5Lx2NvB7cQ4hJ</value>\n</token>",  # nested: value's own tag decides
        "BYPASS: Xk9mQ2vLp7wZ",  # a word that ends in PASS
        "include_keys: DispatchKeySet,",  # a parameter's type, a name of short words
        '_SIGNING = ("authorization", "x-amz-content-sha256", "x-amz-date")',  # header names
        "COMPASS=Xk9mQ2vLp7wZ",
        '"password": "string?",',  # a type in a protocol listing
        "key_or_pass = r'(?:key|pwd|password|pass|token)'",  # a regular expression
        "api keys look like 'sk-[project-name]-[20 alnum]'",  # a format description
        'continuation_token="dG9rX2hvcF8x",',  # paging, not a credential
        '"NextContinuationToken": "1w41l63U0xa8q7smH50vCxyTQqdxo69O3EmK28Bi5PcROI4wI/EyIJg==",',
        "detect-secrets = detect_secrets.main:main",  # an entry point
        "'x-goog-api-client': 'custom-agent/1.0',",  # a product and version
        'SESSION_TOKEN_PREFIX = "FQoGZXIvYXdzEBYaD"',  # a prefix, not a whole token
    ],
)
def test_code_and_descriptions_are_not_credentials(text: str) -> None:
    assert _values(text) == []


def test_basic_auth_is_decoded_to_user_and_password() -> None:
    found = {h.rule for h in SCANNER.scan("Authorization: Basic ZGVwbG95OlhrOW1RMnY=")}  # deploy:Xk9mQ2v
    assert "basic_auth_header" in found
    assert SCANNER.scan("Basic Zm9vYmFyYmF6cXV4") == []  # base64 without a user:password inside
