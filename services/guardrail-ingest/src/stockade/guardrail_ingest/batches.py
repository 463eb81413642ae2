"""The service function of ``POST /api/v1/guardrails/{db_type}``: a request body in, a queued batch or the reason
it was refused out (no HTTP here: :mod:`.api` reads the body and maps a :class:`Refused` to its status).

What it checks, in order, once the key, the store and the size were accepted: the body is JSON (422), no string
holds what JSON or a store cannot keep (422), the event count (413), the schema (422), the batch's project is
the key's (403), the key's and project's events per second (429), then JetStream's acknowledgement (413 for an
event that alone exceeds a message, 503 when JetStream does not answer in time).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from stockade.contracts.ingest_wire import BatchAccepted, GuardrailBatch
from stockade.guardrail_ingest.ingest import EventTooLargeError, Ingest, QueueUnavailableError
from stockade.guardrail_ingest.ingest_keys import IngestPrincipal
from stockade.guardrail_ingest.quotas import QuotaExceeded
from stockade.runtime.storable import unstorable_at

_UNSTORABLE = "a lone surrogate (\\ud800-\\udfff) in a string, or a NUL in an object key: not storable"


@dataclass(frozen=True)
class Refused:
    """A batch not accepted: the HTTP status, the error code and message, and when to retry (429, 503)."""

    status: int
    code: str
    message: str
    retry_after_s: int | None = None


@dataclass(frozen=True)
class Invalid:
    """A body that is not a batch (422): where and why, as FastAPI's validation errors."""

    errors: list[dict[str, Any]]


def too_large(message: str) -> Refused:
    return Refused(413, "payload_too_large", message)


def unavailable(message: str) -> Refused:
    return Refused(503, "unavailable", message, retry_after_s=1)


def over_quota(exc: QuotaExceeded) -> Refused:
    return Refused(429, "rate_limited", str(exc), retry_after_s=exc.retry_after_s)


async def store_batch(
    ingest: Ingest, body: bytes, principal: IngestPrincipal | None, db_type: str
) -> BatchAccepted | Refused | Invalid:
    """Check ``body`` (sent with ``principal``'s key, None with open auth) and queue it for store ``db_type``."""
    limits = ingest.settings.ingest
    try:
        raw = json.loads(body)
    except ValueError as exc:
        return Invalid([{"loc": ("body",), "msg": f"invalid JSON: {exc}", "type": "json"}])
    except RecursionError:
        return Invalid([{"loc": ("body",), "msg": "invalid JSON: nested too deeply", "type": "json"}])
    where = unstorable_at(raw, nul_in_keys=True) if _may_be_unstorable(body) else None
    if (
        where is not None
    ):  # would fail to serialise for JetStream (a 503 retried forever) or to store in MongoDB
        loc = ("body", *where.split(".")) if where else ("body",)
        return Invalid([{"loc": loc, "msg": _UNSTORABLE, "type": "string"}])
    events = raw.get("events") if isinstance(raw, dict) else None
    if isinstance(events, list) and len(events) > limits.max_events:
        return too_large(
            f"{len(events)} events in one request; the cap is {limits.max_events}: split the batch"
        )
    try:
        batch = GuardrailBatch.model_validate_json(body)  # same rules, ~4x faster than from the parsed dict
    except ValidationError as exc:
        return Invalid([{**e, "loc": ("body", *e.get("loc", ()))} for e in exc.errors()])
    if (
        principal is not None
        and principal.project_id is not None
        and batch.run.project_id != principal.project_id
    ):
        return Refused(
            403,
            "forbidden",
            f"this ingest key sends events of project {principal.project_id} only; the batch is for project "
            f"{batch.run.project_id!r} (run.project_id): nothing stored. Use that project's ingest key",
        )
    if ingest.quotas is not None and principal is not None:
        try:  # one flooding key or project is held to its rate; the others' batches pass
            project = batch.run.project_id or "(no project)"
            ingest.quotas.take_events(principal.key_id, project, len(batch.events))
        except QuotaExceeded as exc:
            return over_quota(exc)
    try:
        return await ingest.accept(
            batch, db_type=db_type, ingest_key_id=principal.key_id if principal else None
        )
    except EventTooLargeError as exc:
        return too_large(str(exc))
    except QueueUnavailableError as exc:
        return unavailable(f"event queue unavailable, retry later ({exc})")


_RAW_SURROGATE = re.compile(rb"\xed[\xa0-\xbf]")  # a surrogate code point encoded as UTF-8


def _may_be_unstorable(body: bytes) -> bool:
    """False when no string of this JSON body can hold a lone surrogate or a NUL, so the walk over every string
    (the costliest step of a POST) can be skipped: in UTF-8 JSON those come only from a ``\\u`` escape or a
    surrogate's raw bytes (json.loads decodes with surrogatepass; a raw NUL is refused as a control character)."""
    if json.detect_encoding(body) != "utf-8":
        return True
    return b"\\u" in body or _RAW_SURROGATE.search(body) is not None
