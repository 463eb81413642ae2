"""The shapes that tell a made-up or non-secret value from a credential: placeholders, variables, calls, types,
patterns, made-up runs, names and plain words (CredSweeper's value filters, as rules of our own). The vetoes in
``value_vetoes`` are built from them."""

from __future__ import annotations

import difflib
import itertools
import math
import re
from collections import Counter

# placeholders and references: ${VAR}, $(cmd), $var, %VAR%, %(name)s, {{ x }}, <your-key>, None, changeme
PLACEHOLDER = re.compile(
    r"(?i)^(?:\$(?:[{(\d$]|[a-z_]\w*(?:::|->|\.|\[|\(|/|$))|\^|%(?:[\w.]+%|\(|\{|[sd]$)|\{|<|\*+$|x+$|\.\.\.|none$|null$|nil$|true$|false$|undefined$|changeme$|password$|"
    r"secret$|example|your[_\-]|placeholder|dummy|redacted|process\.env|os\.environ|getenv|config\.|self\.|this\.|"
    r"0x[0-9a-f]+$)"
)
# a type written where a value goes (a protocol or schema listing: "password": "string?", token: String[])
TYPE_NAME = re.compile(
    r"(?i)(?:string|str|int|integer|long|bool|boolean|number|float|double|bytes|object|any|char\*?)(?:\?|\[\])?"
)
# a regular expression or a format description where a value goes: (?:key|pwd), sk-[project-name]-[20 alnum]
PATTERN_VALUE = re.compile(r"\(\?[:=!<P]|\[\d+ [a-z]+\]|\[[a-z]+(?:[-_ ][a-z]+)+(?:\]|$)")
# tokens that page through results or name a change, not credentials: NextContinuationToken, page_token
PAGING_KEY = re.compile(
    r"(?i)(?:continuation|next|page|paging|pagination|change|sync|cursor|resume)[_\-.]?token"
)
# ... and the values standards and vendors print as examples: RFC 4122's and OpenAPI's UUID (123e4567-e89b-12d3-...),
# AWS's documentation bucket (amzn-s3-demo-bucket), OAuth 2.0's tokens and client secret (RFC 6749) and its
# bearer token (RFC 6750, mF_9.B5f-4.1JqM)
FAKE = re.compile(
    r"(?i)example|sample|dummy|x{6,}|\*{4,}|(.)\1{5,}|123e4567-e89b-12d3|amzn-s3-demo|"
    r"(?-i:mF_9\.B5f-4\.1JqM|2YotnFZFEjr1zCsicMWpAA|tGzv3JOkF0XG5Qx2TlKWIA|SplxlOBeZQQYbYS6WxSbIA|7Fjfp0ZBr1KtDRbnfVdmIw)"
)
# an unquoted call or attribute chain is code, not a value: getPassword(), bcrypt.hash(pw, settings.DB_PASSWORD
CODE = re.compile(
    r"[-!]?\.?[A-Za-z_$][\w$]*(?:(?:\.|->|::)[A-Za-z_$][\w$]*)*[(\[]|[(\[]|![a-z]|.*:$|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$|[A-Za-z_$][\w$]*(?:(?:\.|->|::)[A-Za-z_$]\w*)+$"
)
# the end of a value: the next URL query parameter or an HTML entity
# words joined by ':' or '/' (a cache key, a secret's name, ARROW:max_value:exact), or a URL without credentials
# a program entry point (detect_secrets.main:main), a product and version (custom-agent/1.0)
# a time-zone name (America/Los_Angeles, Etc/GMT+5), a URL path (/en/enterprise-server@3.0/auth), a route
# (cms/sites/passwords#update), an AWS signature's credential scope (AKID/20220524/us-east-1/s3/aws4_request)
NOT_A_VALUE = re.compile(
    r"[A-Za-z]+(?:[:/][a-z_\-.]+)+/?$|[a-z][a-z0-9+.\-]*://|(?:tag|urn|arn|mailto):|[\w.\-]*(?:/[\w.\-]+)+\.[a-z]{2,4}$"
    r"|[a-z_]\w*(?:\.[a-z_]\w*)+:[a-z_]\w*$|[a-z][\w.\-]*/v?\d+(?:\.\d+)+$"
    r"|[A-Z][a-z]+(?:[_\-][A-Z]?[a-z]+)*(?:/(?:[A-Z][a-z]+(?:[_\-][A-Z]?[a-z]+)*|GMT[+\-]?\d{0,2}))+$"
    r"|/[a-z0-9]+(?:[\-_.@][a-z0-9]+)*(?:/[a-z0-9\-_.@]*)+$|[a-z_]+(?:/[a-z_]+)*#[a-z_]+$|\S*/aws4_request$"
)
# a date or a time stamp (2016-09-08T21:47:36Z): when a credential was used or changed, not the credential
TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\d(?:[T ]\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:Z|[+\-]\d\d:?\d\d)?)?")
# a call cut at its first argument: "c10::computeDispatchKey(dtype, layout)" (code in a string, not a value)
OPEN_CALL = re.compile(r"(?:[A-Za-z_]\w*(?:::|\.|->))*[A-Za-z_]\w{2,}\(\w*")
# a key that describes a credential rather than holding one: PASSWORD_REGEX, token_url, secret_name, key_id,
# TOKEN_PREFIX
_DESCRIBING = (
    "regex|pattern|format|length|len|min|max|policy|field|name|label|hint|prompt|url|uri|endpoint|path|file|dir|"
    "type|id|count|size|mode|method|ttl|timeout|hash|sha(?:1|256|384|512)?|md5|checksum|digest|fingerprint|"
    "prefix|suffix|scheme|algorithm|domain|host|hostname|region|issuer|audience|realm"
)
NOT_A_SECRET_KEY = re.compile(
    rf"[_\-.](?i:{_DESCRIBING})$|(?<=[a-z])(?:{_DESCRIBING.title()})$|(?:(?<=PASS)|(?<=PWD)|(?<=TOKEN)|(?<=SECRET))(?:FILE|PATH|DIR|URL)$"
)  # PGPASSFILE: the file that holds the password
MIXED = re.compile(r"^(?=.*[a-z])(?=.*[A-Z])(?=.*\d)")
# the parts of a name: capitalised words, acronyms, numbers, separators
_NAME_PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+|[_.]")
_WORD_PART = re.compile(r"[A-Z]?[a-z]*[aeiouy][a-z]*")
SNAKE = re.compile(
    r"[a-z]{2,}\d*(?:(?:[_.]|\._)[a-z0-9]+)*(?:(?:[_.]|\._)[a-z]{2,}\d*)+_?|_?[A-Z]{2,}\d*(?:_[A-Z0-9]+)*_[A-Z]{2,}\d*"
)
# a template or interpolation: f"share-{id}", "#{token}", "%(pw)s", "{{ key }}", "attr_<lower_case_name>"
INTERPOLATION = re.compile(
    r"\{[\w.()\[\]'\"]*\}|[$#]\{|\{\{|%\(\w+\)|(?<!%)%[sdi](?![0-9A-Fa-f])|<[a-z][a-z_\-]*>"
)
# a user name given as its own password (admin/admin, guest:guest): a default, not a secret
SAME_PAIR = re.compile(r"(\w+)[/:]\1\W?$")
# a value opening like code or markup, not a secret: =x, {x, )x, <x, #x, :x, \\x, //x, /*x, `x, _name, %s formats
ODD_START = re.compile(r"[={)<>#:\\_.,&`]|//|/\*|%[deflspuvxz]", re.I)
EMAIL = re.compile(r"[\w.+\-]+@[\w\-]+(?:\.[\w\-]+)*\.[A-Za-z]{2,}")
PASSWORD_KEY = re.compile(r"(?i)pass|pwd|pw|p(?:s|ss|as)w|psw|secure|identified|^-[upa]$|^--(?:proxy-)?user$")


# a password made of the words written where a password goes, and digits: password1, secret123, supersecret123,
# pwd123, mypass123, admin2024, changeit1 (CredSweeper's model rejects them; tiger123 or Summer2019 it keeps)
STAND_IN_PASSWORD = re.compile(
    r"(?i)(?:my|your|the|super|default|test|db)?(?:pass(?:w(?:or)?d)?|pwd|secret|admin|root|changeme|changeit|"
    r"hardcoded|default)+[\d!@#$%^&*._\-]*"
    # or the word Password among capitalised words: SomeKindOfPassword123!@#, PassWordMustBeAtLeast6Chars.
    r"|(?-i:(?:[A-Z][a-z]+)*Pass(?:[Ww](?:or)?d)?(?:[A-Z][a-z]*|\d|[!@#$%^&*._\-])*)"
)
ELIDED = ("...", "…")  # a value cut short: eyJ2IjoiMSIs..., sk-abc…


def template_or_variable(value: str) -> bool:
    """A template (``{secret_key}``, ``%(pw)s``) or a variable name (``my_secret``) written where a value goes."""
    return bool(INTERPOLATION.search(value) or SNAKE.fullmatch(value))


def weak_password(value: str) -> bool:
    """The words written where a password goes, with digits or symbols (``password123``, ``admin2024``,
    ``SomeKindOfPassword123!``): a stand-in in documentation, a weak password in a user's config."""
    return bool(STAND_IN_PASSWORD.fullmatch(value))


def shannon_entropy(value: str) -> float:
    if not value:
        return 0.0
    counts = Counter(value)
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def has_sequence(value: str, run: int = 5) -> bool:
    """A run of ascending or descending characters (12345, abcde, 54321): a made-up value."""
    steps = [ord(b) - ord(a) for a, b in itertools.pairwise(value)]
    count = 1
    for prev, cur in itertools.pairwise(steps):
        count = count + 1 if cur == prev and cur in (1, -1) else 1
        if count >= run - 1:
            return True
    return False


def pattern_run(value: str) -> bool:
    """A run that random characters would hardly hold at this length: the same character, or consecutive ones
    up or down (1234, abcd, 4321), as long as the value's length in bits and at least 4 (4 in 8-15
    characters, 5 in 16-31, 6 in 32-63, ...: CredSweeper's pattern check, from "How Bad Can It Git?",
    NDSS 2019)."""
    run = max(4, len(value).bit_length())
    same = 1
    for a, b in itertools.pairwise(value):
        same = same + 1 if a == b and not a.isspace() and (run < 8 or a not in "A/_") else 1
        if same >= run:
            return True
    return has_sequence(value, run)


def looks_fake(value: str) -> bool:
    return (
        bool(FAKE.search(value)) or pattern_run(value) or (len(value) >= 16 and shannon_entropy(value) < 3.0)
    )


def interleaved_runs(value: str) -> bool:
    """Two runs woven together (9f8e7d6c5b4a3928..., a1b2c3d4e5...): typed by hand. Checked on values in a
    credential context only; a known format's key is judged by its format (CredSweeper keeps SG.a1B2c3D4...).

    The run needed grows with the value as in :func:`pattern_run` (at least 5, else the bit length of half the
    value: 8 in a 400-character value), so a long random secret is not taken for one typed by hand: with a fixed
    5, about one random 400-character value in 1,000 held such a run by chance."""
    if len(value) < 10:
        return False
    run = max(5, (len(value) // 2).bit_length())
    return has_sequence(value[::2].lower(), run) or has_sequence(value[1::2].lower(), run)


def like_key(value: str, key: str) -> bool:
    """The value repeats its key (secret_key = "secret", flatten_with_keys_fn = _flatten_with_keys): a name.
    CredSweeper's similarity check, kept to values without digits: Summer2019! is a (weak) password."""
    value, key = value.lower(), key.lower()
    if len(value) <= len(key) and value in key:
        return True
    if any(c.isdigit() for c in value):
        return False
    return (len(key) >= 4 and key in value) or difflib.SequenceMatcher(None, key, value).ratio() > 0.75


_PASCAL_PART = re.compile(r"[A-Z]{1,5}|[A-Z][a-z]+")
_LONG_WORD = re.compile(r"[A-Z][a-z]*[aeiouy][a-z]*")


def pascal_name(value: str) -> bool:
    """Letters only, in PascalCase parts, one of them a word of seven letters or more: a name such as
    DBRecommendations or HsmConfigurations. Random letters rarely hold a capital and six lower-case letters in a
    row (about one key in a thousand: most random keys also hold digits)."""
    if not value.isalpha() or not value[0].isupper():
        return False
    parts = _NAME_PART.findall(value)
    return all(_PASCAL_PART.fullmatch(p) for p in parts) and any(
        len(p) >= 7 and _LONG_WORD.fullmatch(p) for p in parts
    )


def camel_case_name(value: str) -> bool:
    """A name of two or more capitalised words (ComplianceByResources, JWEKeyWrapping, tokenRefreshUrl)."""
    parts = _NAME_PART.findall(value)
    if "".join(parts) != value or not any(c.isupper() for c in value):
        return False
    words = [p for p in parts if _WORD_PART.fullmatch(p) and sum(c.islower() for c in p) >= 2]
    return len(words) >= 2 and sum(map(len, words)) >= 0.6 * sum(c.isalpha() for c in value)
