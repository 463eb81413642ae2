"""Checks of a matched value by rule: the structure of issued tokens (``token_structure``) and the value shapes
that tell a key from a name, a number or a stand-in.

Each validator takes the matched value and returns True (the structure proves it: keep it even if it looks
made up, as test tokens do), False (the structure disproves it: drop it) or None (cannot tell: the ordinary
made-up-value filter decides).
"""

from __future__ import annotations

import math
import re
import urllib.parse

from stockade.guardrails.checks.exfiltration.plausibility import shannon_entropy
from stockade.guardrails.checks.exfiltration.token_structure import b64decode


def uuid_ok(value: str) -> bool | None:
    """A UUID written in one case (mixed-case UUIDs are hand-edited examples, not generated keys)."""
    return None if value in (value.lower(), value.upper()) else False


def aws_key_id_ok(value: str) -> bool | None:
    """AWS key ids are base32 ids that always carry digits; all letters is a word run (ASIAAUSTRALIA...)."""
    return None if any(c.isdigit() for c in value[4:]) else False


def sealed_ciphertext(value: str) -> bool:
    """A Bitnami sealed-secrets value: base64 of a 2-byte length, an RSA-encrypted session key of that
    length (256 or 512 bytes) and the AES-GCM ciphertext. Encrypted, so not a credential."""
    if len(value) < 340 or not re.fullmatch(r"[A-Za-z0-9+/=]+", value):
        return False
    raw = b64decode(value[:4])
    return raw is not None and int.from_bytes(raw[:2], "big") in (256, 384, 512)


def otp_seed_ok(value: str) -> bool | None:
    """A random base32 seed mixes letters with the digits 2-7 and repeats few characters; upper-case words
    and identifiers (ACCESS_DENIED, HTTPSCONNECTION) do not."""
    digits = sum(c.isdigit() for c in value)
    return None if 2 <= digits <= len(value) // 2 and len(set(value)) >= len(value) * 0.6 else False


_HEX_NUMBER = re.compile(r"(?:0x)?[0-9a-f]{1,21}[ul]{0,3}")


_DEC_NUMBER = re.compile(r"-?[0-9]{1,20}[ul]{0,3}")


def number_like(value: str) -> bool:
    """A hex number under 22 characters or a decimal one (with C suffixes u/l): a constant, not a key
    (CredSweeper's number check, applied to its keyword and Salesforce rules)."""
    v = value.lower()
    return bool(_HEX_NUMBER.fullmatch(v) or _DEC_NUMBER.fullmatch(v))


def salesforce_org_id_ok(value: str) -> bool | None:
    """An org id (00D + 12-15 characters) that is all hex digits is a hex number (00D0A53429897F6EA5)."""
    return False if number_like(value) else None


_BASE36_TOKEN = re.compile(r"(?=[a-z0-9]*\d)(?=(?:[a-z0-9]*[a-z]){5})[a-z0-9]{15}")


def base36_secret_ok(value: str) -> bool | None:
    """A 15-character lower-case base36 secret (Dropbox app secrets): letters and digits, varied (Shannon
    entropy >= 3.43 bits, CredSweeper's bound for random 15-character base36), not a hex number, and not
    pronounceable: random letters hold about one vowel in five, names (initf90modhooks) one in three."""
    if not _BASE36_TOKEN.fullmatch(value) or number_like(value):
        return False
    letters = [c for c in value if c.isalpha()]
    if sum(c in "aeiouy" for c in letters) > 0.3 * len(letters):
        return False
    counts = [value.count(c) for c in set(value)]
    entropy = -sum(n / 15 * math.log2(n / 15) for n in counts)
    return None if entropy >= 3.43 else False


# the field's name or a documentation stand-in written where a URL's password goes (user:password@host,
# scott:tiger@localhost, Oracle's demo account, used throughout database driver docs)
_URL_PASSWORD_STAND_IN = re.compile(
    r"(?i)(?:my|your|some|the|db|a |an )?(?:pass(?:word|wd|phrase)?|pwd|pw|secret|token|key|tiger|<[^>]*>)"
)


def url_password_ok(value: str) -> bool | None:
    """The password part of ``scheme://user:password@host``, percent-decoded (``a%20secret``): a stand-in
    such as ``password`` or ``tiger`` is documentation, not a leaked credential."""
    return False if _URL_PASSWORD_STAND_IN.fullmatch(urllib.parse.unquote(value)) else None


def mixed_token_ok(value: str) -> bool | None:
    """A key behind a short prefix (Composio's ak_, ck_) mixes upper case, lower case and digits; a name such as
    uak_mock_toolkits_info does not."""
    body = value.split("_", 1)[-1]
    mixed = (
        any(c.isupper() for c in body) and any(c.islower() for c in body) and any(c.isdigit() for c in body)
    )
    return None if mixed else False


def nkey_seed_ok(value: str) -> bool | None:
    """An NKEY seed is base32 of random bytes: digits 2-7 among the letters; an upper-case word run has none."""
    return None if sum(c.isdigit() for c in value) >= 3 else False


def paired_secret_ok(value: str) -> bool | None:
    """A secret looked for next to its id (an AWS secret access key, a Google client secret) mixes upper case,
    lower case and digits and has 3.8 bits of entropy per character or more: a random blob, not a word or path."""
    mixed = (
        any(c.islower() for c in value)
        and any(c.isupper() for c in value)
        and any(c.isdigit() for c in value)
    )
    return None if mixed and shannon_entropy(value) >= 3.8 else False
