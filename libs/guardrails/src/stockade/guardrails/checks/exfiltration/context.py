"""Credentials found by their context: a value next to a credential word (``password = ...``, ``"apiKey":``,
``--token X``, ``IDENTIFIED BY``, ``<password>``, ``setPassword("...")``, ``getenv("SECRET", "default")``),
kept only when it looks like a real value: not a placeholder, variable, call, made-up run or plain word."""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from stockade.guardrails.checks.exfiltration.policy import SecretsPolicy
from stockade.guardrails.checks.exfiltration.value_vetoes import CONTEXT_VETOES, ContextValue
from stockade.guardrails.checks.exfiltration.veto import Veto, first_veto

# credential words; pass(?!...) and p(s|ss|as)w(o?r)d cover passwd, pswd, psswd, pswrd
_KEY_WORDS = (
    r"pass(?:wd|word|phrase|code)?|p(?:s|ss|as)w(?:o?r)?d|pswr?(?![a-z])|pwd?(?-i:(?![A-Z]))|"
    r"api(?-i:(?![A-Z]))|secret|token|key(?!word|board|pad|name|store)|auth(?!or(?!i[sz]))\w*|credential|"
    r"salt|nonce|bearer|userpwd"
)
# a quote, also escaped (\") or as an HTML entity (&quot;)
_Q = r"(?:\\{0,3}[\"'`]|&(?:quot|apos|#3[49]);)"
# a variable whose name holds a credential word at a word or camelCase boundary,
# or, in an all-capitals name, a service before PASS/PWD/TOKEN/SECRET (PGPASSWORD, MYSQLPASS, APITOKEN; not BYPASS)
_CAPS_JOINED = r"(?<=[A-Z]{2})(?<!BY)(?<!COM)(?<!SUR)(?<!TRES)(?<!OVER)(?<!UNDER)(?=PASS|PWD|TOKEN|SECRET)"
_KEY = (
    rf"(?P<key>(?<![\w.\-])[\w.\-]{{0,60}}?(?-i:(?<![A-Za-z])|(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[a-z])|{_CAPS_JOINED})"
    rf"(?:{_KEY_WORDS})s?(?-i:(?![a-z]))[\w.\-]{{0,30}}?)"
)
# a name holding a credential word that ends there or at a camelCase or separator boundary (api_key, apiKeyV2,
# passwords; not pwsh-session or tokenizer)
_KEYED = rf"[\w.\-]{{0,60}}?(?:{_KEY_WORDS})s?(?-i:(?![a-z]))[\w.\-]{{0,30}}"
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
    rf"(?i)(?P<key>(?<![\w.\-]){_KEYED})[ \t]*:?=[ \t]*[\w.$]{{0,60}}?(?:getenv|environ\.get|env\.get|fetch|getProperty)\("
    r"[ \t]*[\"'][^\"'\n]{0,200}[\"'][ \t]*(?:,[ \t]*|\)[ \t]*(?:or|\|\||\?\?|\?:)[ \t]*)[\"'](?P<value>[^\"'\s]{4,})"
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
    rf"(?i)(?P<key>(?:\.[ \t]*|\b(?:set|with)_?)\w{{0,60}}?(?:{_KEY_WORDS})\w{{0,30}})[ \t]*\([ \t]*[bru]?[\"'`]"
    r"(?P<value>[^\"'`\s]{4,})[\"'`][ \t]*\)"
)
# a user and password pair given to a credential constructor or a connection:
# new PasswordAuthentication("u", "v"), auth=('u', 'v'), DriverManager.getConnection(url, "u", "v")
_PAIR_CALL = re.compile(
    r"(?i)(?:\b[A-Za-z_]{0,40}(?:pass|credential|auth|login)[A-Za-z_]{0,40}[ \t]*=?[ \t]*\(|\bgetConnection\([^,()\n]{0,200},)"
    r"[ \t]*[bru]?[\"'][^\"'\n]{1,64}[\"'][ \t]*,[ \t]*[bru]?[\"'](?P<value>[^\"'\s]{4,})[\"']"
)
# a .netrc entry: machine host login user password v
_NETRC = re.compile(r"\bmachine[ \t]+\S+[ \t]+login[ \t]+\S+[ \t]+(?P<key>password)[ \t]+(?P<value>\S{4,})")
# libcurl options: curl_easy_setopt(h, CURLOPT_PASSWORD, "v")
_CURLOPT = re.compile(
    r"(?P<key>CURLOPT_(?:XOAUTH2_BEARER|(?:PROXY)?PASSWORD|(?:PROXY)?USERPWD|KEYPASSWD|TLSAUTH_PASSWORD))"
    r"[ \t]*,[ \t]*L?\"(?P<value>[^\"]{4,})\""
)
# command lines (--password X, --pass X, -pwd X, -passin pass:X, --client-secret X, --token X, --api-key X)
_FLAG = re.compile(
    r"(?i)(?:^|\s)(?P<key>-{1,2}[\w\-]{0,40}(?:(?<!by)pass(?:word|phrase|wd|in|out)?|pwd|api[_\-]?key|token|oauth2-bearer|secret[\w\-]{0,30}))"
    r"[ \t]+[\"']?(?:pass:)?(?!file:|env:|fd:|stdin)(?P<value>[^\s\"']{4,})"
)
# tools whose -p is a password (not a port): mysql -pX, docker login -p X, sshpass -p X, redis-cli -a X
_TOOL_FLAG = re.compile(
    r"(?i)\b(?:(?:mysql\w*|mariadb\w*)\b[^\n]{0,300}?\s(?P<key>-p)(?=[^\s-])"
    r"|(?:docker|podman|nerdctl|helm|skopeo|buildah|oras|sshpass)\b[^\n]{0,300}?\s(?P<key2>-p)[ \t]+"
    r"|redis-cli\b[^\n]{0,300}?\s(?P<key3>-a)[ \t]+)[\"']?(?P<value>[^\s\"']{4,})"
)
# SQL: IDENTIFIED BY inside a CREATE/ALTER USER|LOGIN|ROLE or GRANT statement (in prose, "identified by `x`"
# is not a password), and PASSWORD 'X'
_SQL_IDENTIFIED = re.compile(
    r"(?i)\b(?:(?:create|alter)\s+(?:user|login|role)|grant)\b[^;\n]{0,300}?\b"
    r"(?P<key>identified\s+(?:with\s+\w+\s+)?by)\s+[\"']?(?P<value>[^\s\"';]{4,})"
)
_SQL = re.compile(r"(?i)\b(?P<key>password)\s+[\"'](?P<value>[^\s\"';]{4,})")
# CREATE ROLE x WITH LOGIN PASSWORD value; IDENTIFIED WITH 'plugin' AS 'hash'
_SQL_WITH = re.compile(
    r"(?i)(?:\bwith\b[^;\n]{0,40}?\b(?P<key>password)[ \t]+[\"']?"
    r"|\b(?P<key2>identified\s+with)\s+[\"']?\w+[\"']?\s+as\s+[\"'])(?P<value>[^\s\"';]{4,})"
)
# <password>v</password>, and a value on its own line(s) inside the element, quoted or not (a wrapped base64
# token): the first word is the candidate, at most three more words may follow before the closing tag
_XML = re.compile(
    r"(?i)<(?P<key>[\w:\-]{0,60}(?:pass\w{0,30}|secret|token|pwd|api[_\-]?key)[\w:\-]{0,30})(?:\s[^>]{0,1000})?>"
    r"(?:[ \t]*\r?\n\s*)?[\"']?(?P<value>[^<\s\"']{4,})[\"']?(?:\s+[^<\s]+){0,3}\s*</"
)
# <add key="ApiSecret" value="v"/>, <property name="password" value="v"/>, <entry key="db.password">v</entry>
_XML_PAIR = re.compile(
    rf"(?i)<[\w:.\-]{{1,60}}\s[^>]{{0,1000}}?\b(?:key|name|type|id)[ \t]*=[ \t]*[\"'](?P<key>{_KEYED})[\"']"
    r"(?:[^>]{0,1000}?\bvalue[ \t]*=[ \t]*[\"'](?P<value>[^\"'\s]{4,})[\"']|[^>]{0,1000}>(?P<value2>[^<\s]{4,})</)"
)
_CURL_USER = re.compile(
    r"(?i)\bcurl\b[^\n]{0,500}?\s(?P<key>-[uU]|--(?:proxy-)?user)\s+[\"']?[^:\s\"']{0,100}:(?P<value>[^\s\"']{4,})"
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

_VALUE_END = re.compile(r"&(?:[\w.\-]+=|(?:amp|lt|gt|quot|#\d+);?)|%26")


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


ENCODED_DATA_LINE = (
    "encoded_data_line"  # the veto of a candidate on a line of uuencoded data or a binary patch
)
DEFAULT_VETOES = SecretsPolicy().applied(CONTEXT_VETOES)


@dataclass(frozen=True)
class ContextCandidate:
    """A value next to a credential word, with the veto that rejected it (None: accepted, a finding)."""

    start: int
    end: int
    form: str  # the pattern that found it: "assign", "flag", "sql", "xml", ...
    key: str
    value: str
    quoted: bool
    veto: str | None

    @property
    def accepted(self) -> bool:
        return self.veto is None


def context_candidates(
    text: str,
    *,
    entropy_threshold: float,
    min_length: int,
    vetoes: Sequence[Veto[ContextValue]] = DEFAULT_VETOES,
) -> Iterator[ContextCandidate]:
    """Every value in a credential context, with the first of ``vetoes`` that rejects it."""
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
            subject = ContextValue(value, key, quoted, entropy_threshold, min_length)
            veto = first_veto(vetoes, subject)
            name = veto.name if veto else (ENCODED_DATA_LINE if _in_encoded_data(text, start) else None)
            yield ContextCandidate(start, start + len(value), form, key, value, quoted, name)
