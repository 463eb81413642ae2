"""API key format: ``stk_`` + key id (12) + secret (32) + checksum (6), all base62; only SHA-256 is stored.

The checksum (CRC-32 of everything before it) lets a typo or a random string be rejected without a lookup;
the ``stk_`` prefix lets scanners and log redaction recognise a leaked key.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import zlib
from dataclasses import dataclass

PREFIX = "stk_"
ID_LEN = 12
SECRET_LEN = 32
CHECKSUM_LEN = 6
KEY_LEN = len(PREFIX) + ID_LEN + SECRET_LEN + CHECKSUM_LEN
ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_ALLOWED = frozenset(ALPHABET)
PLACEHOLDER_ID = "0" * ID_LEN  # never issued (ids are random); used to keep work equal on malformed keys
_PLACEHOLDER_HASH = "0" * 64  # compared with when no key row was found: the comparison is done on every path


def _base62(number: int, width: int) -> str:
    out = []
    for _ in range(width):
        number, rem = divmod(number, 62)
        out.append(ALPHABET[rem])
    return "".join(reversed(out))


def _random(width: int) -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(width))


def checksum(body: str) -> str:
    return _base62(zlib.crc32(body.encode()), CHECKSUM_LEN)


def hash_key(plaintext: str) -> str:
    """Hex SHA-256 of the whole key: the only form stored."""
    return hashlib.sha256(plaintext.encode("utf-8", "surrogatepass")).hexdigest()


def hashes_match(stored: str, computed: str) -> bool:
    """Constant-time comparison of two hex digests."""
    return hmac.compare_digest(stored.encode(), computed.encode())


@dataclass(frozen=True, slots=True)
class PresentedKey:
    """A key as presented, after the work every check does first: the id to look up (:data:`PLACEHOLDER_ID` for a
    missing or malformed key) and the SHA-256 of what was presented (the lookup's parameter, then compared)."""

    key_id: str
    key_hash: str


def presented(plaintext: str | None) -> PresentedKey:
    """One hash and a format check, the same for every input (a malformed key is looked up as the placeholder)."""
    return PresentedKey(key_id_of(plaintext) or PLACEHOLDER_ID, hash_key(plaintext or ""))


def verify_presented(key: PresentedKey, stored_hash: str | None) -> bool:
    """Whether the presented key is the stored one: the one comparison of every key check (the uniform read,
    ``authenticate``, ingest keys). ``stored_hash`` None (no such key): compared with a placeholder all the same,
    so a missing key costs what a wrong one does."""
    return hashes_match(stored_hash if stored_hash is not None else _PLACEHOLDER_HASH, key.key_hash)


@dataclass(frozen=True, slots=True)
class GeneratedKey:
    key_id: str
    plaintext: str
    key_hash: str

    @property
    def last_four(self) -> str:
        return self.plaintext[-4:]


def generate_key() -> GeneratedKey:
    key_id = _random(ID_LEN)
    while key_id == PLACEHOLDER_ID:  # pragma: no cover - 1 in 62**12
        key_id = _random(ID_LEN)
    body = PREFIX + key_id + _random(SECRET_LEN)
    plaintext = body + checksum(body)
    return GeneratedKey(key_id=key_id, plaintext=plaintext, key_hash=hash_key(plaintext))


def key_id_of(plaintext: str | None) -> str | None:
    """The key id of a well-formed key (prefix, length, alphabet, checksum), else None. No lookup."""
    if plaintext is None or len(plaintext) != KEY_LEN or not plaintext.startswith(PREFIX):
        return None
    rest = plaintext[len(PREFIX) :]
    if not _ALLOWED.issuperset(rest):
        return None
    body, check = plaintext[:-CHECKSUM_LEN], plaintext[-CHECKSUM_LEN:]
    if not hmac.compare_digest(checksum(body), check):
        return None
    return rest[:ID_LEN]


def display(key_id: str, last_four: str) -> str:
    """How a key is shown in listings: never enough to use it."""
    return f"{PREFIX}{key_id}...{last_four}"
