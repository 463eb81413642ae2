"""Cursor paging of the list endpoints and histories (keyset: no OFFSET, each row exactly once).

A page is the rows after the cursor's key in a fixed order on a unique key (prompt or skill name ascending,
version descending), fetched with ``limit + 1`` rows to know whether another page follows. The body keeps the
spec's shape (the plain list); the next page's cursor travels in the ``X-Next-Cursor`` header and in a
``Link: <...>; rel="next"`` header (RFC 8288), both absent on the last page.

The cursor is opaque to clients: URL-safe base64 of ``[kind, key]``. ``kind`` names the listing it belongs to,
so a cursor of one listing given to another is refused with a 422 like any malformed cursor (never a 500).
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

from fastapi import Depends, Query, Request, Response
from fastapi.exceptions import RequestValidationError

from stockade.runtime.storable import is_storable

# Bounded: a page of prompts carries each prompt's full content (up to 256 KiB each).
DEFAULT_LIMIT = 50
MAX_LIMIT = 200
# Names only (the skills index agentskills-http reads, which follows no pages): a bigger page.
NAMES_DEFAULT_LIMIT = 1000
NAMES_MAX_LIMIT = 1000
MAX_CURSOR_CHARS = 512

Limit = Annotated[
    int, Query(ge=1, le=MAX_LIMIT, description=f"Page size, 1-{MAX_LIMIT} (default {DEFAULT_LIMIT}).")
]
NamesLimit = Annotated[
    int,
    Query(
        ge=1,
        le=NAMES_MAX_LIMIT,
        description=f"Page size, 1-{NAMES_MAX_LIMIT} (default {NAMES_DEFAULT_LIMIT}).",
    ),
]
CursorQuery = Annotated[
    str | None,
    Query(
        max_length=MAX_CURSOR_CHARS,
        description="The X-Next-Cursor of the previous page (opaque); absent for the first page.",
    ),
]

K = TypeVar("K", str, int)
T = TypeVar("T")


def encode(kind: str, key: str | int) -> str:
    raw = json.dumps([kind, key], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode(raw: str | None, kind: str, key_type: type[K]) -> K | None:
    """The key after which the page starts (None for the first page); a bad cursor is a 422."""
    if raw is None:
        return None
    try:
        decoded = json.loads(base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)))
    except (ValueError, binascii.Error):
        decoded = None
    ok = (
        isinstance(decoded, list)
        and len(decoded) == 2
        and decoded[0] == kind
        and type(decoded[1]) is key_type
        and _bindable(decoded[1])
    )
    if not ok:
        raise RequestValidationError(
            [
                {
                    "type": "value_error",
                    "loc": ("query", "cursor"),
                    "msg": "not a cursor of this listing: pass the X-Next-Cursor value of its previous page"
                    " unchanged, or no cursor for the first page",
                    "input": raw,
                }
            ]
        )
    value: K = decoded[1]
    return value


def _bindable(key: str | int) -> bool:
    """A key the database can compare with: storable text, or a positive PostgreSQL integer."""
    if isinstance(key, int):
        return 0 <= key <= 2**31 - 1
    return is_storable(key)


def page(rows: list[T], limit: int) -> tuple[list[T], bool]:
    """(the page, whether more follow) from ``limit + 1`` fetched rows."""
    return rows[:limit], len(rows) > limit


def set_next(request: Request, response: Response, cursor: str | None) -> None:
    """Put the next page's cursor in ``X-Next-Cursor`` and a ``Link: rel="next"`` (nothing on the last page)."""
    if cursor is None:
        return
    params: dict[str, Any] = {k: v for k, v in request.query_params.items() if k not in ("cursor", "api_key")}
    params["cursor"] = cursor
    url = request.url.replace_query_params(**params)
    response.headers["X-Next-Cursor"] = cursor
    # a key given in the query string is not copied into the header (keys in URLs end up in logs)
    response.headers["Link"] = f'<{url.path}?{url.query}>; rel="next"'


@dataclass(frozen=True)
class Page:
    """A list endpoint's paging: its ``limit`` and ``cursor`` query parameters and the response to put the next
    page's cursor on (a FastAPI dependency: :data:`PageDep`, :data:`NamesPageDep`)."""

    request: Request
    response: Response
    limit: int
    cursor: str | None

    def after(self, kind: str, key_type: type[K]) -> K | None:
        """The key the page starts after (None for the first page); a cursor of another listing is a 422."""
        return decode(self.cursor, kind, key_type)

    def ends_at(self, kind: str, last: str | int | None) -> None:
        """The page ended at ``last`` (None: it was the last page): set the next page's cursor headers."""
        set_next(self.request, self.response, None if last is None else encode(kind, last))


def _page(
    request: Request, response: Response, limit: Limit = DEFAULT_LIMIT, cursor: CursorQuery = None
) -> Page:
    return Page(request, response, limit, cursor)


def _names_page(
    request: Request, response: Response, limit: NamesLimit = NAMES_DEFAULT_LIMIT, cursor: CursorQuery = None
) -> Page:
    return Page(request, response, limit, cursor)


PageDep = Annotated[Page, Depends(_page)]
NamesPageDep = Annotated[Page, Depends(_names_page)]
