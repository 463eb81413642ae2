"""Credentials found by their context: a value next to a credential word (``password = ...``, ``"apiKey":``,
``--token X``, ``IDENTIFIED BY``, ``<password>``, ``setPassword("...")``, ``getenv("SECRET", "default")``),
kept only when it looks like a real value: not a placeholder, variable, call, made-up run or plain word."""

from __future__ import annotations

import base64
import difflib
import itertools
import math
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from stockade.guardrails.checks.exfiltration.validators import number_like, sealed_ciphertext
from stockade.guardrails.checks.exfiltration.words import wordy

# credential words; pass(?!...) and p(s|ss|as)w(o?r)d cover passwd, pswd, psswd, pswrd
_KEY_WORDS = (
    r"pass(?:wd|word|phrase|code)?|p(?:s|ss|as)w(?:o?r)?d|pswr?(?![a-z])|pwd?(?-i:(?![A-Z]))|"
    r"api(?-i:(?![A-Z]))|secret|token|key(?!word|board|pad|name|store)|auth(?!or(?!i[sz]))\w*|credential|"
    r"salt|nonce|bearer|userpwd"
)
# a quote, also escaped (\") or as an HTML entity (&quot;)
_Q = r"(?:\\{0,3}[\"'`]|&(?:quot|apos|#3[49]);)"
# a variable whose name holds a credential word at a word or camelCase boundary
_KEY = (
    rf"(?P<key>(?<![\w.\-])[\w.\-]{{0,60}}?(?-i:(?<![A-Za-z])|(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[a-z]))(?:{_KEY_WORDS})s?"
    r"(?-i:(?![a-z]))[\w.\-]{0,30}?)"
)
_KEYED = rf"[\w.\-]*?(?:{_KEY_WORDS})[\w.\-]*"
# a value opening: a constructor or string prefix, quotes, an auth scheme (Authorization: "token X")
_OPEN = (
    r"(?:(?:new[ \t]+)?(?:(?-i:[A-Z])\w{0,24}|str|bytes|string|\[\]byte|Buffer\.from)\((?=[ \t]*[bruf]?[\"'`])[ \t]*)?"
    rf"(?:[bruf]{{1,2}}(?=[\"'`])|@(?=\"))?(?P<quote>{_Q}{{0,3}})"
    r"(?:(?i:token|bearer|basic|bot|oauth|apikey|ssws|digest)[ \t]+(?=\S{8}))?"
)
# a declared type or property body between the name and '=': ": str", ": &'static str", "As String", "{ get; }"
_TYPE = r"(?:(?::[ \t]*|[ \t]as[ \t]+)[A-Za-z_&'][\w.<>\[\]?&' ]{0,30}?[ \t]*(?==)|\{[ \t]*get;[^}\n]{0,30}\}[ \t]*)?"
# key = value, key: value, "key": "value", key: str = value, key => value, key%3Dvalue (the separators of
# CredSweeper's keyword pattern; "key is value" is prose, left to its doc-only rules)
_CONTEXT = re.compile(
    rf"(?i){_KEY}(?:{_Q}?\])?{_Q}?[ \t]*{_TYPE}"
    r"(?::=|=>|<-|\?=|[!=]==?|=~|=|:(?!:)|%3D)"
    rf"[ \t]*{_OPEN}(?P<value>[^\s\"'`;,)<>{{}}\]\\]{{4,}}|(?<=[\"'`])[^\s\"'`\\]{{4,}})"
)
# directives with a space for separator: #define KEY "v", ENV KEY v (Dockerfile), set KEY v, SetEnv KEY v
_DIRECTIVE = re.compile(
    rf"(?im)(?:^|(?<=[\s;&|]))(?:#[ \t]*define|%define|%global|set|setx|SetEnv|ENV)[ \t]+(?P<key>{_KEYED})"
    r"[ \t]+(?P<quote>[\"']?)(?P<value>[^\s\"'=]{4,})"
)
# a default in code: SECRET := getenv("X", "value"), PASSWORD = os.environ.get("X") or "value"
_ENV_DEFAULT = re.compile(
    rf"(?i)(?P<key>(?<![\w.\-]){_KEYED})[ \t]*:?=[ \t]*[\w.$]*?(?:getenv|environ\.get|env\.get|fetch|getProperty)\("
    r"[ \t]*[\"'][^\"'\n]*[\"'][ \t]*(?:,[ \t]*|\)[ \t]*(?:or|\|\||\?\?|\?:)[ \t]*)[\"'](?P<value>[^\"'\s]{4,})"
)
# a lookup with a default: os.getenv("DB_PASSWORD", "v"), config.get('api_key', default='v'),
# process.env.API_TOKEN || "v"
_GET_DEFAULT = re.compile(
    rf"(?i)(?:\b(?:get\w*|fetch|setdefault)\([ \t]*[\"'](?P<key>{_KEYED})[\"'][ \t]*,[ \t]*(?:default[ \t]*=[ \t]*)?"
    rf"|\b(?:process\.env|ENV|os\.environ)(?:\.|\[[\"'])(?P<key2>{_KEYED})[\"'\]]*[ \t]*(?:\|\||\?\?|\bor\b)[ \t]*)"
    r"[\"'](?P<value>[^\"'\s]{4,})"
)
# a setter call: define('PASSWORD', 'value'), config.set("api_token", "value")
_CALL_PAIR = re.compile(
    rf"(?i)\b(?:define|set\w*|put\w*|add\w*)\([ \t]*[\"'](?P<key>{_KEYED})[\"'][ \t]*,[ \t]*[\"']"
    r"(?P<value>[^\"'\s]{4,})"
)
# a key and its value as a pair in a tuple or list (not a call's arguments): ("api_key", "v"), ['password', 'v']
_TUPLE = re.compile(
    rf"(?i)(?:(?<![\w.])\(|[\[{{,])[ \t]*[\"'](?P<key>{_KEYED})[\"'][ \t]*,[ \t]*[bru]?[\"'](?P<value>[^\"'\s]{{4,}})[\"']"
)
# a credential-named method given one literal: setPassword("v"), .apiKey("v"), withToken('v')
_SETTER = re.compile(
    rf"(?i)(?P<key>(?:\.[ \t]*|\b(?:set|with)_?)\w*?(?:{_KEY_WORDS})\w*)[ \t]*\([ \t]*[bru]?[\"'`]"
    r"(?P<value>[^\"'`\s]{4,})[\"'`][ \t]*\)"
)
# a user and password pair given to a credential constructor or a connection:
# new PasswordAuthentication("u", "v"), auth=('u', 'v'), DriverManager.getConnection(url, "u", "v")
_PAIR_CALL = re.compile(
    r"(?i)(?:\b[A-Za-z_]*(?:pass|credential|auth|login)[A-Za-z_]*[ \t]*=?[ \t]*\(|\bgetConnection\([^,()\n]*,)"
    r"[ \t]*[bru]?[\"'][^\"'\n]{1,64}[\"'][ \t]*,[ \t]*[bru]?[\"'](?P<value>[^\"'\s]{4,})[\"']"
)
# a .netrc entry: machine host login user password v
_NETRC = re.compile(r"\bmachine[ \t]+\S+[ \t]+login[ \t]+\S+[ \t]+(?P<key>password)[ \t]+(?P<value>\S{4,})")
# libcurl options: curl_easy_setopt(h, CURLOPT_PASSWORD, "v")
_CURLOPT = re.compile(
    r"(?P<key>CURLOPT_(?:XOAUTH2_BEARER|(?:PROXY)?PASSWORD|(?:PROXY)?USERPWD|KEYPASSWD|TLSAUTH_PASSWORD))"
    r"[ \t]*,[ \t]*L?\"(?P<value>[^\"]{4,})\""
)
# command lines (--password X, -passin pass:X, --client-secret X, --token X): the flag names of CredSweeper's
# CMD rules. --pass X, --passwd X, -pwd X and --api-key X are left out: its labels never hold them (train: three
# such lines in two files, all unlabelled, while --password / -password / --token / -secret lines are labelled)
_FLAG = re.compile(
    r"(?i)(?:^|\s)(?P<key>-{1,2}[\w\-]*(?:pass(?:word|phrase|in|out)|token|oauth2-bearer|secret[\w\-]*))"
    r"[ \t]+[\"']?(?:pass:)?(?!file:|env:|fd:|stdin)(?P<value>[^\s\"']{4,})"
)
# tools whose -p is a password (not a port): mysql -pX, docker login -p X, sshpass -p X, redis-cli -a X
_TOOL_FLAG = re.compile(
    r"(?i)\b(?:(?:mysql\w*|mariadb\w*)\b[^\n]*?\s(?P<key>-p)(?=[^\s-])"
    r"|(?:docker|podman|nerdctl|helm|skopeo|buildah|oras|sshpass)\b[^\n]*?\s(?P<key2>-p)[ \t]+"
    r"|redis-cli\b[^\n]*?\s(?P<key3>-a)[ \t]+)[\"']?(?P<value>[^\s\"']{4,})"
)
# SQL: IDENTIFIED BY inside a CREATE/ALTER USER|LOGIN|ROLE or GRANT statement (in prose, "identified by `x`"
# is not a password), and PASSWORD 'X'
_SQL_IDENTIFIED = re.compile(
    r"(?i)\b(?:(?:create|alter)\s+(?:user|login|role)|grant)\b[^;\n]*?\b"
    r"(?P<key>identified\s+(?:with\s+\w+\s+)?by)\s+[\"']?(?P<value>[^\s\"';]{4,})"
)
_SQL = re.compile(r"(?i)\b(?P<key>password)\s+[\"'](?P<value>[^\s\"';]{4,})")
# CREATE ROLE x WITH LOGIN PASSWORD value; IDENTIFIED WITH 'plugin' AS 'hash'
_SQL_WITH = re.compile(
    r"(?i)(?:\bwith\b[^;\n]{0,40}?\b(?P<key>password)[ \t]+[\"']?"
    r"|\b(?P<key2>identified\s+with)\s+[\"']?\w+[\"']?\s+as\s+[\"'])(?P<value>[^\s\"';]{4,})"
)
_XML = re.compile(
    r"(?i)<(?P<key>[\w:\-]*(?:pass\w*|secret|token|pwd|api[_\-]?key)[\w:\-]*)(?:\s[^>]*)?>(?P<value>[^<\s]{4,})</"
)
# <add key="ApiSecret" value="v"/>, <property name="password" value="v"/>, <entry key="db.password">v</entry>
_XML_PAIR = re.compile(
    rf"(?i)<[\w:.\-]+\s[^>]*?\b(?:key|name|type|id)[ \t]*=[ \t]*[\"'](?P<key>{_KEYED})[\"']"
    r"(?:[^>]*?\bvalue[ \t]*=[ \t]*[\"'](?P<value>[^\"'\s]{4,})[\"']|[^>]*>(?P<value2>[^<\s]{4,})</)"
)
_CURL_USER = re.compile(
    r"(?i)\bcurl\b[^\n]*?\s(?P<key>-[uU]|--(?:proxy-)?user)\s+[\"']?[^:\s\"']*:(?P<value>[^\s\"']{4,})"
)
_SECURE_STRING = re.compile(r"(?i)(?P<key>ConvertTo-SecureString)\s+[\\\"']*(?P<value>[^\s\"'\\]{4,})")
PATTERNS: dict[str, re.Pattern[str]] = {
    "assign": _CONTEXT,
    "directive": _DIRECTIVE,
    "env_default": _ENV_DEFAULT,
    "get_default": _GET_DEFAULT,
    "call_pair": _CALL_PAIR,
    "setter": _SETTER,
    "tuple": _TUPLE,
    "pair_call": _PAIR_CALL,
    "netrc": _NETRC,
    "curlopt": _CURLOPT,
    "flag": _FLAG,
    "tool_flag": _TOOL_FLAG,
    "sql": _SQL_IDENTIFIED,
    "sql_password": _SQL,
    "sql_with": _SQL_WITH,
    "xml": _XML,
    "xml_pair": _XML_PAIR,
    "secure_string": _SECURE_STRING,
    "curl_user": _CURL_USER,
}

# placeholders and references: ${VAR}, $(cmd), $var, %VAR%, %(name)s, {{ x }}, <your-key>, None, changeme
_PLACEHOLDER = re.compile(
    r"(?i)^(?:\$(?:[{(\d$]|[a-z_]\w*(?:::|->|\.|\[|\(|$))|\^|%(?:[\w.]+%|\(|\{|[sd]$)|\{|<|\*+$|x+$|\.\.\.|none$|null$|nil$|true$|false$|undefined$|changeme$|password$|"
    r"secret$|example|your[_\-]|placeholder|dummy|redacted|process\.env|os\.environ|getenv|config\.|self\.|this\.|"
    r"0x[0-9a-f]+$)"
)
_FAKE = re.compile(r"(?i)example|sample|dummy|x{6,}|\*{4,}|(.)\1{5,}")
# an unquoted call or attribute chain is code, not a value: getPassword(), bcrypt.hash(pw, settings.DB_PASSWORD
_CODE = re.compile(
    r"\.?[A-Za-z_$][\w$]*(?:(?:\.|->|::)[A-Za-z_$][\w$]*)*[(\[]|[(\[]|![a-z]|.*:$|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$|[A-Za-z_$][\w$]*(?:(?:\.|->|::)[A-Za-z_$]\w*)+$"
)
# the end of a value: the next URL query parameter or an HTML entity
# lower-case words joined by ':' or '/' (a cache key, a secret's name), or a URL without credentials
_NOT_A_VALUE = re.compile(
    r"[a-z]+(?:[:/][a-z_\-.]+)+/?$|[a-z][a-z0-9+.\-]*://|(?:tag|urn|arn|mailto):|[\w.\-]*(?:/[\w.\-]+)+\.[a-z]{2,4}$"
)
# a key that describes a credential rather than holding one: PASSWORD_REGEX, token_url, secret_name, key_id
_DESCRIBING = (
    "regex|pattern|format|length|len|min|max|policy|field|name|label|hint|prompt|url|uri|endpoint|path|file|dir|"
    "type|id|count|size|mode|method|ttl|timeout|hash|sha(?:1|256|384|512)?|md5|checksum|digest|fingerprint"
)
_NOT_A_SECRET_KEY = re.compile(rf"[_\-.](?i:{_DESCRIBING})$|(?<=[a-z])(?:{_DESCRIBING.title()})$")
_MIXED = re.compile(r"^(?=.*[a-z])(?=.*[A-Z])(?=.*\d)")
# the parts of a name: capitalised words, acronyms, numbers, separators
_NAME_PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+|[_.]")
_WORD_PART = re.compile(r"[A-Z]?[a-z]*[aeiouy][a-z]*")
_SNAKE = re.compile(
    r"[a-z]{2,}\d*(?:[_.][a-z0-9]+)*(?:[_.][a-z]{2,}\d*)+|_?[A-Z]{2,}\d*(?:_[A-Z0-9]+)*_[A-Z]{2,}\d*"
)
# a template or interpolation: f"share-{id}", "#{token}", "%(pw)s", "{{ key }}"
_INTERPOLATION = re.compile(r"\{[\w.()\[\]'\"]*\}|[$#]\{|\{\{|%\(\w+\)")
# a user name given as its own password (admin/admin, guest:guest): a default, not a secret
_SAME_PAIR = re.compile(r"(\w+)[/:]\1\W?$")
# a value opening like code or markup, not a secret: =x, {x, )x, <x, #x, :x, \\x, //x, /*x, _name, %s-style formats
_ODD_START = re.compile(r"[={)<>#:\\_]|//|/\*|%[deflspuvxz]", re.I)
_VALUE_END = re.compile(r"&(?:[\w.\-]+=|(?:amp|lt|gt|quot|#\d+);?)|%26")
_EMAIL = re.compile(r"[\w.+\-]+@[\w\-]+(?:\.[\w\-]+)*\.[A-Za-z]{2,}")
_PASSWORD_KEY = re.compile(
    r"(?i)pass|pwd|pw|p(?:s|ss|as)w|psw|secure|identified|^-[upa]$|^--(?:proxy-)?user$"
)


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


def looks_fake(value: str) -> bool:
    return (
        bool(_FAKE.search(value))
        or has_sequence(value)
        or (len(value) >= 16 and shannon_entropy(value) < 3.0)
    )


def looks_like_credential(
    value: str, *, key: str, entropy_threshold: float, min_length: int, quoted: bool = True
) -> bool:
    value = value.rstrip(".,") if len(value) > 5 else value  # a sentence's full stop is not part of it
    if (
        _PLACEHOLDER.search(value)
        or value.lower() == key.lower()
        or looks_fake(value)
        or _SAME_PAIR.match(value)
        or number_like(value)
        or _ODD_START.match(value)
        or _like_key(value, key)
    ):
        return False
    if not quoted and _CODE.match(value):
        return False
    if re.fullmatch(r"[a-z]+(?:[_\-.][a-z]+)*", value) and len(value) < 24:  # an identifier, not a value
        return False
    if _SNAKE.fullmatch(value):  # snake_case or dotted.names: a variable, a constant, an event name
        return False
    if _INTERPOLATION.search(value):  # a template
        return False
    if _NOT_A_VALUE.match(value) or _NOT_A_SECRET_KEY.search(
        key
    ):  # a URL, a path; a key that names, not holds
        return False
    if _EMAIL.fullmatch(value) or sealed_ciphertext(value):  # an address; an encrypted (sealed) value
        return False
    if _PASSWORD_KEY.search(key):
        # real passwords mix letters with digits or symbols; plain words (EXPIRE, HISTORY) are not values
        return len(value) >= 6 and shannon_entropy(value) >= 2.0 and not value.isalpha()
    if wordy(value) or camel_case_name(value):  # made of words: a name or a stand-in, not a generated key
        return False
    if len(value) >= min_length:
        return shannon_entropy(value) >= entropy_threshold
    # a shorter value is kept when it mixes cases and digits throughout and hardly repeats (Xk9mQ2vL, not Version2)
    if len(value) < 8 or _MIXED.search(value) is None or len(set(value)) < 0.75 * len(value):
        return False
    classes = [c.isdigit() + 2 * c.isupper() for c in value]
    return sum(a != b for a, b in itertools.pairwise(classes)) >= (len(value) - 1) / 2


def _like_key(value: str, key: str) -> bool:
    """The value repeats its key (secret_key = "secret", flatten_with_keys_fn = _flatten_with_keys): a name.
    CredSweeper's similarity check, kept to values without digits: Password123! is a (weak) password."""
    value, key = value.lower(), key.lower()
    if len(value) <= len(key) and value in key:
        return True
    if any(c.isdigit() for c in value):
        return False
    return (len(key) >= 4 and key in value) or difflib.SequenceMatcher(None, key, value).ratio() > 0.75


def camel_case_name(value: str) -> bool:
    """A name of two or more capitalised words (ComplianceByResources, JWEKeyWrapping, tokenRefreshUrl)."""
    parts = _NAME_PART.findall(value)
    if "".join(parts) != value or not any(c.isupper() for c in value):
        return False
    words = [p for p in parts if _WORD_PART.fullmatch(p) and sum(c.islower() for c in p) >= 3]
    return len(words) >= 2 and sum(map(len, words)) >= 0.6 * sum(c.isalpha() for c in value)


def _quoted_value(text: str, start: int, quote: str) -> str | None:
    """A quoted value runs to its closing quote (past ; , ) and other characters that end a bare value)."""
    if not quote or quote[-1] not in "\"'`":
        return None
    end = text.find(quote[-1], start, start + 256)
    value = text[start:end].rstrip("\\") if end > start else ""
    return value if value and not any(c.isspace() for c in value) else None


# a full line of uuencoded data: 'M' (45 bytes) and 60 characters from '!' to '`'
_UUE_LINE = re.compile(r"M[!-`]{60}")


def _line_at(text: str, pos: int) -> tuple[int, int]:
    start = text.rfind("\n", 0, pos) + 1
    end = text.find("\n", pos)
    return start, len(text) if end < 0 else end


# a line of a git binary patch: a length character (A-Z: 1-26 bytes, a-z: 27-52) and base85 in groups of 5
_BASE85_LINE = re.compile(r"[A-Za-z][0-9A-Za-z!#$%&()*+;<=>?@^_`{|}~\-]{5,65}")


def _in_encoded_data(text: str, pos: int) -> bool:
    """A position on a line of encoded data, where PW: or KEY= is chance: a full uuencoded line next to
    another one, or a git binary patch line whose base85 decodes to the length its first character gives."""
    start, end = _line_at(text, pos)
    if _UUE_LINE.fullmatch(text, start, end):
        neighbours = []
        if start > 0:
            neighbours.append(_line_at(text, start - 1))
        if end < len(text):
            neighbours.append(_line_at(text, end + 1))
        return any(_UUE_LINE.fullmatch(text, a, b) for a, b in neighbours)
    line = text[start:end].strip()
    if (len(line) - 1) % 5 or not _BASE85_LINE.fullmatch(line):
        return False
    size = ord(line[0]) - (64 if line[0].isupper() else 70)
    try:
        return len(base64.b85decode(line[1:])) == size
    except ValueError:
        return False


@dataclass(frozen=True)
class ContextCandidate:
    """A value next to a credential word, before or after the plausibility filters (``accepted``)."""

    start: int
    end: int
    form: str  # the pattern that found it: "assign", "flag", "sql", "xml", ...
    key: str
    value: str
    quoted: bool
    accepted: bool


def context_candidates(text: str, *, entropy_threshold: float, min_length: int) -> Iterator[ContextCandidate]:
    """Every value in a credential context, with the verdict of :func:`looks_like_credential`."""
    for form, pattern in PATTERNS.items():
        for m in pattern.finditer(text):
            groups = m.groupdict()
            key = next((groups[k] for k in ("key", "key2", "key3") if groups.get(k)), "password")
            group = "value" if groups.get("value") is not None else "value2"
            value = _quoted_value(text, m.start(group), groups.get("quote") or "") or m.group(group)
            value = _VALUE_END.split(value, maxsplit=1)[0]
            quote = groups.get("quote", "-")
            quoted = bool(quote) and not (len(quote) == 2 and quote[0] == quote[1])  # "" is an empty literal
            if len(value) < 4:
                continue
            start = m.start(group)
            accepted = looks_like_credential(
                value, key=key, entropy_threshold=entropy_threshold, min_length=min_length, quoted=quoted
            ) and not _in_encoded_data(text, start)
            yield ContextCandidate(start, start + len(value), form, key, value, quoted, accepted)


def find_in_context(text: str, *, entropy_threshold: float, min_length: int) -> Iterator[tuple[int, int]]:
    """Spans of values that sit in a credential context and look like real credentials."""
    for c in context_candidates(text, entropy_threshold=entropy_threshold, min_length=min_length):
        if c.accepted:
            yield c.start, c.end
