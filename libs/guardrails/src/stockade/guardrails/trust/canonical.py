"""Canonical JSON (RFC 8785 / JCS) for the attestation's signed fields.

The signed fields are a flat object whose values are strings, integers in the IEEE-754 safe range, or null.
For that subset RFC 8785 reduces to: members sorted by key (UTF-16 code units; our keys are ASCII so this is
plain byte order), no whitespace, integers in shortest decimal form, strings as in ECMAScript
``JSON.stringify`` (escape ``"`` and ``\\``, control characters as ``\\b \\f \\n \\r \\t`` or ``\\u00xx``
lowercase, everything else raw), the whole document encoded as UTF-8.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

_MAX_SAFE_INT = 2**53 - 1

Scalar = str | int | None


def canonical_json(fields: Mapping[str, Scalar]) -> bytes:
    """Encode a flat mapping of str/int/None values as RFC 8785 canonical JSON bytes."""
    members = []
    for key in sorted(fields):  # ASCII keys: code-point order is UTF-16 code-unit order
        if type(key) is not str or not key.isascii():
            raise TypeError(f"canonical key must be an ASCII string, got {key!r}")
        value = fields[key]
        if type(value) is str:
            encoded = _string(value)
        elif value is None:
            encoded = "null"
        elif type(value) is int:  # exact type: bool (an int subclass) is refused below
            if abs(value) > _MAX_SAFE_INT:
                raise ValueError(f"canonical integer {key!r} is outside the IEEE-754 safe range")
            encoded = str(value)
        else:
            raise TypeError(f"canonical value of {key!r} must be str, int or None")
        members.append(f"{_string(key)}:{encoded}")
    return ("{" + ",".join(members) + "}").encode("utf-8")


# json's non-ASCII string encoder escapes exactly what JCS escapes (" \ and U+0000..U+001F, the latter as
# \b \f \n \r \t or lowercase \u00xx) and leaves every other character raw.
_string = json.encoder.encode_basestring
canonical_string = _string
"""One JSON string in JCS form, quotes included."""
