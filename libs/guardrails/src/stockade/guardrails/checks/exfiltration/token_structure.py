"""The structure issuers build into their tokens: checksums (GitHub and npm CRC32 in base62, Atlassian CRC32
suffixes, bech32), decodable payloads (Jira PATs, NTLM messages, JOSE headers, JWTs, Grafana keys, Basic
credentials, JFrog and Discord tokens) and the ASN.1 of private keys.

Each check takes the matched value and returns True (the structure proves it: keep it even if it looks made up,
as test tokens do), False (the structure disproves it: drop it) or None (cannot tell: the ordinary made-up-value
filter decides). Each ``KeyFormat`` names the check that judges its values.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import zlib

_BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


_BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"


def _base62(n: int, width: int) -> str:
    out = ""
    while n:
        n, r = divmod(n, 62)
        out = _BASE62[r] + out
    return out.rjust(width, "0")


def github_checksum_ok(value: str) -> bool | None:
    """GitHub's prefixed tokens (ghp_, gho_, ghu_, ghs_, ghr_) and npm's (npm_) are 30 random base62 characters
    and 6 more of their CRC32, so that scanners can tell a token from a look-alike. A token of exactly that
    shape with a wrong checksum was never issued (a hand-typed example, an altered copy): not reported by this
    rule, as GitHub's own secret scanning and CredSweeper's rule judge it. A value in a credential context
    (``token = "ghp_..."``) is still judged there. Other lengths cannot be checked: the filter decides."""
    body = value.split("_", 1)[-1]
    if len(body) >= 36 and _base62(zlib.crc32(body[:-6].encode()), 6) == body[-6:]:
        return True
    return False if len(body) == 36 else None


def _bech32_polymod(values: list[int]) -> int:
    gen = (0x3B6A57B2, 0x26508E6D, 0x1EA119FA, 0x3D4233DD, 0x2A1462B3)
    chk = 1
    for v in values:
        top = chk >> 25
        chk = (chk & 0x1FFFFFF) << 5 ^ v
        for i in range(5):
            chk ^= gen[i] if (top >> i) & 1 else 0
    return chk


def bech32_ok(value: str) -> bool:
    """Bech32 checksum (BIP-173), as used by age keys: ``<hrp>1<data><6 checksum chars>``."""
    lowered = value.lower()
    hrp, sep, data = lowered.rpartition("1")
    if not sep or not hrp or len(data) < 6 or any(c not in _BECH32 for c in data):
        return False
    expanded = [ord(c) >> 5 for c in hrp] + [0] + [ord(c) & 31 for c in hrp]
    return _bech32_polymod(expanded + [_BECH32.index(c) for c in data]) == 1


def b64decode(value: str) -> bytes | None:
    try:
        return base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
    except (binascii.Error, ValueError):
        return None


def b64decode_any(value: str) -> bytes | None:
    """Base64 or base64url, padded or not."""
    value = value.rstrip("=").replace("-", "+").replace("_", "/")
    return b64decode(value[: len(value) - len(value) % 4] if len(value) % 4 == 1 else value)


def atlassian_pat_ok(value: str) -> bool | None:
    """Jira / Confluence Data Center personal access tokens: base64 of ``<12-digit id>:<20 random bytes>``."""
    raw = b64decode(value)
    return None if raw is not None and re.fullmatch(rb"\d{12}:", raw[:13]) else False


def ntlm_ok(value: str) -> bool:
    """An NTLM authenticate (type 3) message: base64 of ``NTLMSSP\\0`` then message type 3 (its zero runs
    would trip the made-up-value filter, so only a spelled-out 'example' marks a fake)."""
    raw = b64decode(value[: len(value) - len(value) % 4])
    ok = raw is not None and raw.startswith(b"NTLMSSP\x00\x03\x00\x00\x00")
    return ok and "example" not in value.lower()


_JWK_PRIVATE = re.compile(r'"kty"\s*:\s*"[^"]*"(?=[^{}]*"[dk]"\s*:\s*"[A-Za-z0-9_\-]{8,})')


def base64_jwk_ok(value: str) -> bool:
    """Base64 of a JSON Web Key (set) that carries a private member ("d") or a symmetric key ("k")."""
    raw = b64decode(value[: len(value) - len(value) % 4])
    return raw is not None and _JWK_PRIVATE.search(raw.decode("utf-8", "replace")) is not None


def jose_header_ok(value: str) -> bool | None:
    """The first segment of a JWS/JWE is base64url JSON with an "alg" or "enc" member. A JWS whose payload
    segment is empty (``header..signature``, RFC 7515's detached content) signs something kept elsewhere: it
    carries no claims and grants nothing. A JWE may leave its second segment (the encrypted key) empty."""
    raw = b64decode_any(value.split(".", 1)[0])
    text = raw.decode("utf-8", "replace") if raw else ""
    if not re.search(r'"(?:alg|enc)"\s*:', text):
        return False
    return False if ".." in value and not re.search(r'"enc"\s*:', text) else None


def der_private_key_ok(value: str) -> bool:
    """Base64 of a DER private key: a SEQUENCE with a long-form length, then the version INTEGER 0 or 1
    (PKCS#1 RSA, PKCS#8). Certificates, public keys and encrypted PKCS#8 open with a nested SEQUENCE."""
    raw = b64decode(value[:16])
    if raw is None or len(raw) < 7 or raw[0] != 0x30 or not 0x81 <= raw[1] <= 0x83:
        return False
    head = 2 + (raw[1] & 0x7F)
    return raw[head : head + 3] in (b"\x02\x01\x00", b"\x02\x01\x01")


def grafana_key_ok(value: str) -> bool:
    """A Grafana API key: base64 of a JSON object with the key "k", the name "n" and the org "id"."""
    raw = b64decode_any(value)
    text = raw.decode("utf-8", "replace") if raw else ""
    return all(f'"{member}"' in text for member in ("k", "n", "id"))


def base64_pem_key_ok(value: str) -> bool | None:
    """Base64 of a PEM private key: the header must be followed by a body. Base64 of the header line alone
    (``LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0t``, a rule's or a doc's prefix) is no key, as a PEM header
    with nothing after it is none."""
    raw = b64decode(value[: len(value) - len(value) % 4])
    if raw is None:
        return None
    _, found, rest = raw.partition(b"PRIVATE KEY-----")
    return False if found and len(rest.strip(b"-\r\n \t")) < 16 else None


def _json_object(raw: bytes | None) -> dict[str, object] | None:
    try:
        data = json.loads(raw) if raw else None
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


_JOSE_HEADER_KEYS = {
    "alg",
    "typ",
    "kid",
    "enc",
    "cty",
    "jku",
    "jwk",
    "x5u",
    "x5c",
    "x5t",
    "crit",
    "zip",
    "b64",
}


def jwt_ok(value: str) -> bool | None:
    """A JSON Web Token: a header of JOSE parameters (alg, typ, kid...), a JSON payload, and a signature of
    random bytes. A header or payload that decodes to something else, or a signature that decodes to plain
    ASCII (``...eyJzdWIiOiIxIn0.signature-goes-here``), was written by hand. Parts that do not decode (cut
    short) cannot be judged."""
    parts = value.split(".")
    header, payload = b64decode_any(parts[0]), b64decode_any(parts[1]) if len(parts) > 1 else None
    head = _json_object(header)
    if (
        header is not None
        and header.startswith(b"{")
        and head is not None
        and not _JOSE_HEADER_KEYS & head.keys()
    ):
        return False
    looks_json = payload is not None and payload.startswith(b"{") and payload.rstrip().endswith(b"}")
    if looks_json and _json_object(payload) is None:
        return False
    if len(parts) > 2 and len(parts[2]) >= 16:
        signature = b64decode_any(parts[2])
        if signature is not None and signature.isascii():  # random bytes of 12+ are all ASCII 1 time in 4096+
            return False
    return None


def crc32_suffix_ok(value: str) -> bool | None:
    """Atlassian API tokens (ATATT3...=<8 hex>, ATCTT3...) and Bitbucket app passwords (ATBB...<8 hex>) end
    with the CRC32 of everything before it: a value whose checksum does not match was never issued. A value
    without the hex ending (cut at an escaped '=' such as ``\\=`` or ``%3D``) cannot be judged."""
    tail = value[-8:]
    if not re.fullmatch(r"[0-9A-Fa-f]{8}", tail) or (value.startswith("ATATT") and value[-9:-8] != "="):
        return None
    return zlib.crc32(value[:-8].encode()) == int(tail, 16)


def numbered_secret_ok(value: str) -> bool | None:
    """Bitbucket Data Center HTTP access tokens (BBDC-...): base64 of a number of at least four digits, ':' and
    random bytes, as Jira and Confluence tokens are."""
    raw = b64decode_any(value.removeprefix("BBDC-"))
    if raw is None:
        return None
    number, sep, _ = raw.partition(b":")
    return None if sep and number.isdigit() and 4 <= len(number) <= 20 else False


def discord_bot_ok(value: str) -> bool | None:
    """A Discord bot token opens with the bot's numeric user id in base64."""
    raw = b64decode_any(value.split(".", 1)[0])
    return None if raw is not None and raw.isdigit() and len(raw) >= 4 else False


_BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def jfrog_token_ok(value: str) -> bool | None:
    """JFrog identity tokens are base64 of ``reftkn:<n>:<n>:<random>``; API keys (AKCp...) are base58 of 54
    bytes."""
    if value.startswith("cmVmd"):
        raw = b64decode_any(value)
        return None if raw is not None and re.match(rb"reftkn:\d+:\d+:[\w/+\-]+", raw) else False
    if any(c not in _BASE58 for c in value):
        return False
    number = 0
    for c in value:
        number = number * 58 + _BASE58.index(c)
    return None if (number.bit_length() + 7) // 8 == 54 else False


def basic_auth_ok(value: str) -> bool | None:
    """HTTP Basic credentials: base64 of printable ``user:password`` with a password that is not a stock word."""
    raw = b64decode(value)
    try:
        text = raw.decode("utf-8") if raw is not None else ""
    except UnicodeDecodeError:
        return False
    user, sep, password = text.partition(":")
    if not sep or not user or not password or not text.isprintable():
        return False
    return False if password.lower() in ("password", "pass", "secret", "changeme", "pwd") else None


# PEM body lines as code and data files wrap them: quotes, string joins, comment marks, escaped line ends
_PEM_END = re.compile(r"-----END [A-Z0-9 ]*-----")


_PEM_WRAP = "\\'\"`;,[]#*! \t"


_PEM_JOIN = re.compile(r"^\+(?=[\s\"'])|(?<=[\s\"'])\+$")  # a string join, not base64's '+'


_PEM_HEADER_LINE = re.compile(r"[A-Za-z\-]+:\s")  # Proc-Type: 4,ENCRYPTED, DEK-Info: ..., Comment: ...


_BASE64_LINE = re.compile(r"[A-Za-z0-9+/=]+")


def pem_body_disproves(header: str, text: str, body_start: int) -> bool:
    """Whether the body after a ``-----BEGIN ... PRIVATE KEY-----`` header, read up to its END line, is clean
    base64 that is not a key: a DER key is one ASN.1 SEQUENCE filling the whole body, an OpenSSH key opens
    with ``openssh-key-v1``. A 50-byte fragment under an RSA header is a stand-in (CredSweeper's PEM check
    drops it too). A body this cannot read (log prefixes, no END line: output cut short) proves nothing, so the
    header's hit stands."""
    end = _PEM_END.search(text, body_start, body_start + 16_000)
    if end is None or "PGP" in header:
        return False
    body = text[body_start : end.start()].replace("\\r", "\n").replace("\\n", "\n")
    chunks = []
    for line in body.splitlines():
        line = line.strip().removeprefix("//").removeprefix("/*").removesuffix("*/")
        line = _PEM_JOIN.sub("", line.strip()).strip(_PEM_WRAP)
        if not line or _PEM_HEADER_LINE.match(line):
            continue
        if not _BASE64_LINE.fullmatch(line):
            return False
        chunks.append(line)
    raw = b64decode("".join(chunks).rstrip("="))
    if raw is None or len(raw) < 2:
        return False
    if "OPENSSH" in header:
        return not raw.startswith(b"openssh-key-v1\0")
    return _der_length(raw) != len(raw)


def _der_length(raw: bytes) -> int:
    """The total length an ASN.1 SEQUENCE header announces (-1 when it is not one)."""
    if raw[0] != 0x30:
        return -1
    if raw[1] < 0x80:
        return 2 + raw[1]
    size = raw[1] & 0x7F
    if not 1 <= size <= 3 or len(raw) < 2 + size:
        return -1
    return 2 + size + int.from_bytes(raw[2 : 2 + size], "big")
