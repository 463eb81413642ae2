"""SQL pieces every ClickHouse run query shares: time parameters, the filters' WHERE clause, a run's outcome and
a check event's duration as ClickHouse expressions, and the conversion of what comes back."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from stockade.contracts.run_store import RunQuery, RunScope

# A check event's duration_ms: the sink writes payloads with sorted keys and json.dumps separators, so it is the
# first key; read it by position (byte work) and parse the JSON only for a payload written otherwise.
DURATION = (
    "if(startsWith(payload, '{\"duration_ms\": ') AND position(payload, ',') > 17, "
    "toFloat64OrZero(substring(payload, 17, position(payload, ',') - 17)), "
    "JSONExtractFloat(payload, 'duration_ms'))"
)
OUTCOME = (
    "multiIf(countIf(action = 'block') > 0, 'block', countIf(action = 'mask') > 0, 'mask', "
    "countIf(action = 'warn') > 0, 'warn', 'allow')"
)


def time_param(value: datetime) -> str:
    """A time as the query parameter ``toDateTime64(%(x)s, 6, 'UTC')`` reads."""
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")


def aware(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def payload_of(text: str) -> dict[str, Any]:
    """A stored payload column as a dict ({} when it is not a JSON object)."""
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def where(scope: RunScope, query: RunQuery) -> tuple[list[str], dict[str, Any]]:
    """The conditions (joined with AND by the caller) and parameters of the caller's scope and the query's
    range, project and agent."""
    conditions = [
        "occurred_at >= toDateTime64(%(since)s, 6, 'UTC')",
        "occurred_at < toDateTime64(%(until)s, 6, 'UTC')",
    ]
    params: dict[str, Any] = {"since": time_param(query.since), "until": time_param(query.until)}
    conditions.append(in_scope(scope.narrowed(query.project), params))
    narrow(conditions, params, "agent_id = %(agent)s", "agent", query.agent)
    return conditions, params


def in_scope(scope: RunScope, params: dict[str, Any]) -> str:
    """The condition that keeps the rows of ``scope``'s projects (a bound parameter); false for an empty one."""
    ids = scope.stored_ids()
    if not ids:
        return "0"
    params["scope"] = ids
    return "project_id IN %(scope)s"


def narrow(conditions: list[str], params: dict[str, Any], condition: str, name: str, value: object) -> None:
    """Add ``condition``, which reads the parameter ``name``, with ``value``; nothing when ``value`` is None (that
    filter is not set)."""
    if value is not None:
        conditions.append(condition)
        params[name] = value
