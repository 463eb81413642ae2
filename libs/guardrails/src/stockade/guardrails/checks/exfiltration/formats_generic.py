"""Key formats not tied to one vendor: tokens and keys by their structure (JWTs, private keys, JSON Web Keys),
credentials in URLs and auth headers, ids that serve as keys, storage endpoints, and the secrets reported only
next to their id."""

from __future__ import annotations

from stockade.guardrails.checks.exfiltration.key_format import Body, KeyFormat, fmt
from stockade.guardrails.checks.exfiltration.placement import (
    EXAMPLE_LINE,
    NAMES_A_RESOURCE,
    NOT_A_KEY_BODY,
    STAND_IN_URL_PASSWORD,
    WEAK_URL_PASSWORD,
)
from stockade.guardrails.checks.exfiltration.token_structure import (
    base64_jwk_ok,
    base64_pem_key_ok,
    basic_auth_ok,
    der_private_key_ok,
    jose_header_ok,
    jwt_ok,
    ntlm_ok,
)
from stockade.guardrails.checks.exfiltration.validators import (
    base36_secret_ok,
    otp_seed_ok,
    paired_secret_ok,
    url_password_ok,
    uuid_ok,
)

GENERIC_FORMATS: tuple[KeyFormat, ...] = (
    fmt(
        "jwt",
        r"\b(eyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-=]{10,}\.[A-Za-z0-9_\-=]{10,})",
        (".eyJ",),
        validator=jwt_ok,
    ),
    # a JWS/JWE in other layouts: accepted when its first segment decodes to a JOSE header (alg/enc)
    fmt(
        "jose_token",
        r"\b(eyJ[A-Za-z0-9_\-=]{13,}\.[A-Za-z0-9_\-=+/.]{10,})",
        ("eyJ",),
        validator=jose_header_ok,
    ),
    # the header with a body after it (within 80 characters: escaped newlines, quotes, string joins, log
    # prefixes between): a header alone is a constant in code that reads keys, not a key
    fmt(
        "private_key",
        r"(-----BEGIN (?!ENCRYPTED)(?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----)(?=[\s\S]{0,80}?[A-Za-z0-9+/]{32})",
        ("-----BEGIN ",),
        context=(NOT_A_KEY_BODY,),
        body=Body.STRUCTURED,
    ),
    # base64 of "-----BEGIN ... PRIVATE KEY-" at any of the three byte alignments, also inside a longer blob
    fmt(
        "base64_private_key",
        r"(LS0t(?:LS1CRUdJTi|LUJFR0lOI|QkVHSU4g)[A-Za-z0-9+/]{0,11}(?:UFJJVkFURSBLRVkt|QUklWQVRFIEtFWS0t|FBSSVZBVEUgS0VZ)[A-Za-z0-9+/=]*)",
        ("LS0t",),
        validator=base64_pem_key_ok,
    ),
    fmt("ntlm_token", r"\b(TlRMTVNTUAAD[A-Za-z0-9+/]{20,}={0,2})", ("TlRMTVNTUAAD",), validator=ntlm_ok),
    # a DER private key in base64 (PKCS#1 / PKCS#8): the validator reads the ASN.1 header
    fmt(
        "base64_der_private_key",
        r"(?<![A-Za-z0-9+/])(MII[A-Za-f][A-Za-z0-9+/]{8}[A-Za-z0-9+/=]{8,})",
        ("MII",),
        validator=der_private_key_ok,
    ),
    # Dropbox app secret shape (CredSweeper's weak base36 rule): 15 lower-case letters and digits alone
    fmt(
        "base36_app_secret",
        r"(?<![0-9A-Za-z_+\-\\])([a-z0-9]{15})(?![=0-9A-Za-z_/+\-])",
        validator=base36_secret_ok,
        severity=0.4,
    ),
    # UUIDs serve as API keys (Heroku, Azure, many SaaS); a lower score: masked, not blocked on its own
    fmt(
        "uuid",
        r"\b([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})\b",
        validator=uuid_ok,
        context=(NAMES_A_RESOURCE,),
        severity=0.5,
        body=Body.WORDS,
    ),
    # a private JSON Web Key: the "kty" member of an object that has "d" (private) or "k" (symmetric)
    fmt(
        "json_web_key",
        r'("kty"\s*:\s*"[^"]*")(?=[^{}]*"[dk]"\s*:\s*"[A-Za-z0-9_\-]{8,})',
        ('"kty"',),
        body=Body.STRUCTURED,
    ),
    fmt(
        "base64_json_web_key",
        r"\b((?:ewog|ewoi|ew0K|eyJ|eyAi|Wwog|Wwp7|Ww0K|WyJ|W3s)[A-Za-z0-9+/]{60,}={0,2})",
        ("ewog", "ewoi", "ew0K", "eyJ", "eyAi", "Wwog", "Wwp7", "Ww0K", "WyJ", "W3s"),
        validator=base64_jwk_ok,
    ),
    # an OTP / 2FA seed: a bare base32 string of 16 or 32 characters
    fmt(
        "otp_secret",
        r"(?<![A-Za-z0-9_/+\-])([A-Z2-7]{16}|[A-Z2-7]{32})(?![A-Za-z0-9_/+=\-])",
        validator=otp_seed_ok,
        severity=0.6,
    ),
    # storage endpoints name data that can be pulled: a lower score, masked
    fmt(
        "aws_s3_bucket",
        r"\b([a-z0-9.\-]+\.s3(?:[.\-][a-z0-9\-]+)?\.amazonaws\.com)",
        (".amazonaws.com",),
        context=(EXAMPLE_LINE,),
        severity=0.4,
        body=Body.WORDS,
    ),
    fmt(
        "firebase_domain",
        r"\b([a-z0-9.\-]+\.firebase(?:io|app)\.com)",
        (".firebase",),
        context=(EXAMPLE_LINE,),
        severity=0.4,
        body=Body.WORDS,
    ),
    fmt(
        "url_credentials",
        r"""\b[a-z][a-z0-9+.\-]{1,20}://(?:[^\s:/'"]{0,64}:)?[^\s:/'"]{0,64}:([^\s:@/'"]{3,64})@[\w.\-]+""",
        ("://",),
        validator=url_password_ok,
        context=(STAND_IN_URL_PASSWORD, WEAK_URL_PASSWORD),
        body=Body.WORDS,
    ),
    # the validator decodes user:password
    fmt(
        "basic_auth_header",
        r"\b(?i:basic)[ \t]+([A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=])",
        ("asic", "ASIC"),
        validator=basic_auth_ok,
    ),
    fmt("bearer_auth_header", r"\b(?i:bearer)\s+([A-Za-z0-9_\-.~+/]{20,}=*)", ("earer", "EARER")),
)

# secrets that are random blobs alone: reported only next to their id, with a shape, mixed case and digits
PAIRED_FORMATS: tuple[KeyFormat, ...] = (
    fmt(
        "aws_secret_access_key",
        r"(?<![A-Za-z0-9/+])([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])",
        validator=paired_secret_ok,
        context=(EXAMPLE_LINE,),
        body=Body.WORDS,
        paired_with="aws_access_key_id",
    ),
    fmt(
        "google_oauth_client_secret",
        r"(?<![A-Za-z0-9_\-])([A-Za-z0-9_\-]{24})(?![A-Za-z0-9_\-=.])",
        validator=paired_secret_ok,
        context=(EXAMPLE_LINE,),
        body=Body.WORDS,
        paired_with="google_oauth_client_id",
    ),
    fmt(
        "alibaba_access_key_secret",
        r"(?<![A-Za-z0-9/+])([A-Za-z0-9]{30})(?![A-Za-z0-9/+=])",
        validator=paired_secret_ok,
        context=(EXAMPLE_LINE,),
        body=Body.WORDS,
        paired_with="alibaba_access_key_id",
    ),
)
