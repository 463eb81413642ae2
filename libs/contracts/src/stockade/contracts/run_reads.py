"""``guardrail.cmd.read_runs.v1``: the console reads an embedded run store through guardrail-ingest.

chdb (embedded ClickHouse) opens a data directory in one process only, and under ``stockade up`` that process is
guardrail-ingest. model-api's console therefore sends its run-page queries (ClickHouse SQL with bound parameters,
the same text it sends a ClickHouse server) to guardrail-ingest, which runs them on a read-only connection and
answers with the rows.

A result larger than one NATS message comes in parts: the reply to part 0 says how many parts there are
(``parts``), and the asker requests ``part`` 1, 2, ... with the same ``read_id``; guardrail-ingest keeps the
remaining parts of a result for a short while. Every part is an ordinary single reply, so a NATS user with
``allow_responses: true`` can send it.

Values that JSON has no type for are tagged: a datetime is ``{"$datetime": "<ISO 8601>"}``, a date
``{"$date": "YYYY-MM-DD"}`` and a tuple ``{"$tuple": [...]}`` (a ``(project_id, run_id) IN %(only)s`` parameter
needs tuples, not arrays). :func:`encode_value` and :func:`decode_value` do it on both sides.

An error reply is ``{"error": {"code", "message"}}``; codes: ``invalid_request``, ``refused`` (not a read query),
``unknown_table`` (nothing stored yet), ``query_failed``, ``too_large``, ``expired`` (a later part asked for after
it was dropped), ``unavailable`` (the store cannot be opened, or this replica does not serve reads).
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field

MAX_SQL_CHARS: Final = 64_000


class RunStoreRead(BaseModel):
    """Request of ``guardrail.cmd.read_runs.v1`` (model-api to guardrail-ingest): one read-only query, or a later
    part of its result."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    schema_version: int = Field(default=1, ge=1)
    read_id: str = Field(
        pattern=r"^[A-Za-z0-9_-]{1,64}$", description="Chosen by the asker; names the result's later parts."
    )
    sql: str = Field(
        default="",
        max_length=MAX_SQL_CHARS,
        description="One ClickHouse SELECT with %(name)s placeholders (part 0 only; later parts ignore it).",
    )
    parameters: dict[str, Any] = Field(
        default_factory=dict, description="Bound parameters, values as encode_value writes them."
    )
    part: int = Field(default=0, ge=0, description="0 runs the query; n > 0 fetches part n of its result.")


class RunStoreRows(BaseModel):
    """Reply of ``guardrail.cmd.read_runs.v1``: part ``part`` of ``parts`` of the result rows, in order."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    schema_version: int = Field(default=1, ge=1)
    read_id: str
    part: int = Field(ge=0)
    parts: int = Field(ge=1)
    rows: list[list[Any]] = Field(description="Rows of this part, values as encode_value writes them.")


def encode_value(value: Any) -> Any:
    """``value`` as JSON-ready data, datetimes, dates and tuples tagged (lists and dicts walked)."""
    if isinstance(value, datetime):
        return {"$datetime": value.isoformat()}
    if isinstance(value, date):
        return {"$date": value.isoformat()}
    if isinstance(value, tuple):
        return {"$tuple": [encode_value(v) for v in value]}
    if isinstance(value, list):
        return [encode_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): encode_value(v) for k, v in value.items()}
    return value


def decode_value(value: Any) -> Any:
    """The inverse of :func:`encode_value`."""
    if isinstance(value, list):
        return [decode_value(v) for v in value]
    if isinstance(value, dict):
        if len(value) == 1:
            tag = next(iter(value))
            if tag == "$datetime":
                return datetime.fromisoformat(value[tag])
            if tag == "$date":
                return date.fromisoformat(value[tag])
            if tag == "$tuple":
                return tuple(decode_value(v) for v in value[tag])
        return {k: decode_value(v) for k, v in value.items()}
    return value


def decode_row(row: list[Any]) -> tuple[Any, ...]:
    """One reply row as the tuple clickhouse-connect's ``result_rows`` would hold."""
    return tuple(decode_value(v) for v in row)
