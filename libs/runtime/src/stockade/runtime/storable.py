"""Text a database can hold: PostgreSQL refuses a NUL character in text, and a lone surrogate is not UTF-8.

A request parameter with either fails the statement it is bound to with a driver error (a 500), and on a statement
shared by several requests (prompt-api's batched read) it fails all of them. Services refuse such text at the edge:
a parameter typed :data:`StorableStr` is a 422 naming the parameter, an id that cannot exist is "not found", and
:func:`unstorable_at` finds the first unencodable string anywhere in a parsed JSON body.

A NUL inside a JSON value is storable (JSON text escapes it as ``\\u0000``); in a text column it is not.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import AfterValidator

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
_SURROGATE = re.compile("[\ud800-\udfff]")
UNSTORABLE_MESSAGE = "must not contain a NUL character or a lone surrogate"


def is_storable(value: str) -> bool:
    """True when ``value`` can be bound as PostgreSQL text (no NUL, no lone surrogate)."""
    return _UNSTORABLE.search(value) is None


def check_storable(value: str) -> str:
    """``value`` unchanged, or ValueError (pydantic reports it as a 422 on the field)."""
    if not is_storable(value):
        raise ValueError(UNSTORABLE_MESSAGE)
    return value


StorableStr = Annotated[str, AfterValidator(check_storable)]


def unstorable_at(value: Any, *, nul_in_keys: bool = False) -> str | None:
    """The dotted location of the first string (key or value) holding a lone surrogate in a parsed JSON value
    (``""`` for the top level), or None when every string encodes as UTF-8. ``json.loads`` accepts ``"\\ud800"``,
    and such a string fails every later ``encode()``: hashing, the database driver, the response.

    ``nul_in_keys``: an object key holding a NUL counts too (a BSON key is a C string: MongoDB cannot store it).
    Iterative, so a body nested as deep as the JSON parser allows cannot exhaust the stack here."""
    key_pattern = _UNSTORABLE if nul_in_keys else _SURROGATE
    pending: list[tuple[str, Any]] = [("", value)]
    while pending:
        where, item = pending.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return where
        elif isinstance(item, dict):
            children = []
            for key, child in item.items():
                if isinstance(key, str) and key_pattern.search(key):
                    return where
                children.append((f"{where}.{key}" if where else str(key), child))
            pending.extend(reversed(children))
        elif isinstance(item, list):
            pending.extend(reversed([(f"{where}.{i}" if where else str(i), c) for i, c in enumerate(item)]))
    return None
