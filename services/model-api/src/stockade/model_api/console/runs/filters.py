"""Filters of the console's run pages, parsed from the query string: plain values, no store in sight.

Bad input never reaches a store: :func:`parse_filters` returns the problems (shown inline on the page, 422), and
:func:`decode_cursor` refuses a cursor it did not make.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Final
from urllib.parse import urlencode

from stockade.contracts.run_store import ACTIONS, RunCursor

DEFAULT_RANGE: Final = timedelta(days=7)
MAX_RANGE: Final = timedelta(days=366)
_NAME = re.compile(r"^[^\x00-\x1f\x7f-\x9f]{1,128}$")
_TIME_FORMATS = ("%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d")
EARLIEST: Final = datetime(1971, 1, 1, tzinfo=UTC)  # leaves room for the default range before it
LATEST: Final = datetime(2200, 1, 1, tzinfo=UTC)  # within every store's date range


class FilterError(ValueError):
    """A filter or cursor the pages cannot use; ``problems`` lists ``(field, message)``."""

    def __init__(self, problems: list[tuple[str, str]]) -> None:
        super().__init__("; ".join(f"{f}: {m}" for f, m in problems))
        self.problems = problems


@dataclass(frozen=True)
class RunFilters:
    """What the runs list, the overview and the export are narrowed to, as the page's form holds it (the store
    is asked with the same values as a ``RunQuery``, ``run_store.wire_query``). Times are aware UTC."""

    since: datetime
    until: datetime
    project: str | None = None
    agent: str | None = None
    outcome: str | None = None
    check: str | None = None
    action: str | None = None
    # what the visitor typed, echoed back into the form (times as typed, not normalised)
    raw: Mapping[str, str] = field(default_factory=dict, compare=False)

    def query(self, **extra: str) -> str:
        """The query string of these filters (for links: paging, export, overview)."""
        params = {
            "project": self.project,
            "agent": self.agent,
            "from": _form_time(self.since),
            "to": _form_time(self.until),
            "outcome": self.outcome,
            "check": self.check,
            "action": self.action,
        }
        params.update(extra)
        return urlencode({k: v for k, v in params.items() if v})


def _form_time(value: datetime) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M")


def _parse_time(text: str) -> datetime:
    """``2026-11-24T10:00`` (the form's datetime-local, read as UTC), a date, or ISO 8601 with an offset."""
    for fmt in _TIME_FORMATS:
        try:
            return datetime.strptime(text, fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    parsed = datetime.fromisoformat(text)  # ValueError for anything else
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def parse_filters(params: Mapping[str, str], now: datetime | None = None) -> RunFilters:
    """Filters from a query string; raises :class:`FilterError` listing every problem at once."""
    now = (now or datetime.now(UTC)).replace(second=0, microsecond=0) + timedelta(minutes=1)
    problems: list[tuple[str, str]] = []
    raw = {
        k: params.get(k, "").strip() for k in ("project", "agent", "from", "to", "outcome", "check", "action")
    }

    def name(key: str) -> str | None:
        value = raw[key]
        if not value:
            return None
        if not _NAME.match(value):
            problems.append((key, "at most 128 characters, no control characters"))
            return None
        return value

    def choice(key: str, allowed: tuple[str, ...]) -> str | None:
        value = raw[key].lower()
        if not value:
            return None
        if value not in allowed:
            problems.append((key, f"must be one of {', '.join(allowed)}"))
            return None
        return value

    def when(key: str) -> datetime | None:
        if not raw[key]:
            return None
        try:
            value = _parse_time(raw[key])
        except (ValueError, OverflowError):
            problems.append((key, "not a date and time (use YYYY-MM-DDTHH:MM, UTC)"))
            return None
        if not EARLIEST <= value <= LATEST:
            problems.append((key, "must lie between 1971 and 2200"))
            return None
        return value

    project, agent, check = name("project"), name("agent"), name("check")
    outcome, action = choice("outcome", ACTIONS), choice("action", ACTIONS)
    since, until = when("from"), when("to")
    until = until or now
    since = since or until - DEFAULT_RANGE
    if not problems:
        if since >= until:
            problems.append(("from", "must be before 'to'"))
        elif until - since > MAX_RANGE:
            problems.append(("from", "the range may span at most 366 days"))
    if problems:
        raise FilterError(problems)
    return RunFilters(since, until, project, agent, outcome, check, action, raw=raw)


def empty_filters(now: datetime | None = None) -> RunFilters:
    """The default filters (the last seven days), for a page that shows a problem list instead of results."""
    return parse_filters({}, now)


def with_raw(filters: RunFilters, raw: Mapping[str, str]) -> RunFilters:
    return replace(filters, raw=dict(raw))


Cursor = RunCursor
"""Where the next page of runs starts (runs newest last event first, then ids); ``encode()`` makes the link token."""


def decode_cursor(text: str | None) -> RunCursor | None:
    if not text:
        return None
    try:
        padded = text + "=" * (-len(text) % 4)
        body: Any = json.loads(base64.urlsafe_b64decode(padded.encode("ascii")).decode("utf-8"))
        if not (isinstance(body, list) and len(body) == 3 and all(isinstance(x, str) for x in body)):
            raise ValueError("shape")
        last_at = datetime.fromisoformat(body[0])
        if (
            last_at.tzinfo is None
            or not EARLIEST <= last_at <= LATEST
            or len(body[1]) > 256
            or len(body[2]) > 256
        ):
            raise ValueError("range")
        return RunCursor(last_at=last_at.astimezone(UTC), project_id=body[1], run_id=body[2])
    except (ValueError, OverflowError, UnicodeError, binascii.Error) as exc:
        raise FilterError(
            [("cursor", "not a page link of this console: start again from the first page")]
        ) from exc
