"""Routes of spec 4.3: ``GET /api/v1/db_type`` and ``POST /api/v1/guardrails/{db_type}`` (plus a status page).

Statuses of the POST, in the order they are checked:

| status | when |
|---|---|
| 429 | this client address had too many failed authentications (``ingest.key_failures_per_client``); |
|     | Retry-After says when to try again. A key in the positive cache is never refused this way |
| 401 | X-API-Key is missing, not an ingest key, unknown or revoked (``ingest.auth = "keys"``, the default) |
| 503 | model-api, which verifies ingest keys, did not answer: nothing accepted, retry later |
| 400 | ``{db_type}`` is not one of mongodb, dynamodb, clickhouse |
| 409 | ``{db_type}`` is valid but not the active store (the client asks GET /db_type again) |
| 413 | body larger than ``ingest.max_body_bytes`` (4 MiB), more than ``ingest.max_events`` (1000) events, or |
|     | one event that, with the run's fields copied onto it, exceeds a JetStream message (NATS max_payload) |
| 422 | body is not JSON or does not match the schema (message names the fields) |
| 429 | the key or its project has more request bytes in flight than its quota (before the body is read), |
|     | or, once parsed, more events per second than its quota (``ingest.quotas``); Retry-After says when |
| 403 | the batch's project (``run.project_id``, copied onto every event) is not the key's project |
| 503 | JetStream did not acknowledge in ``ingest.publish_timeout_s``: nothing accepted, retry later |
| 202 | queued durably: ``{"accepted": n, "batch_id": ..., "duplicate": bool, "db_type": ...}`` |
"""

from __future__ import annotations

import json
import re
from typing import Any

from fastapi import APIRouter, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError

from stockade.contracts.ingest_wire import DB_TYPES, BatchAccepted, DbTypeReply, GuardrailBatch
from stockade.guardrail_ingest.deps import IngestDep
from stockade.guardrail_ingest.ingest import EventTooLargeError, QueueUnavailableError
from stockade.guardrail_ingest.ingest_keys import (
    IngestPrincipal,
    KeyRejected,
    TooManyFailures,
    VerifierUnavailable,
)
from stockade.guardrail_ingest.quotas import QuotaExceeded
from stockade.runtime.errors import error_response, error_responses
from stockade.runtime.storable import unstorable_at

router = APIRouter(prefix="/api/v1", tags=["guardrail storage"])
_UNSTORABLE = "a lone surrogate (\\ud800-\\udfff) in a string, or a NUL in an object key: not storable"


def _inlined(schema: dict[str, Any]) -> dict[str, Any]:
    """A JSON schema with its ``$defs`` references inlined (the body is parsed by hand, so FastAPI cannot
    register the models; this keeps /docs showing the real body)."""
    defs = schema.pop("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                return walk(dict(defs[node["$ref"].rsplit("/", 1)[-1]]))
            return {k: walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    result: dict[str, Any] = walk(schema)
    return result


_BODY_DOC = {
    "requestBody": {
        "required": True,
        "content": {"application/json": {"schema": _inlined(GuardrailBatch.model_json_schema())}},
    }
}


@router.get("/db_type", response_model=DbTypeReply)
async def db_type(ingest: IngestDep) -> DbTypeReply:
    return DbTypeReply(db_type=ingest.db_type)


@router.post(
    "/guardrails/{db_type}",
    status_code=202,
    response_model=None,
    openapi_extra=_BODY_DOC,
    responses={
        202: {"model": BatchAccepted, "description": "Queued durably; stored by the sink workers."},
        **error_responses(
            {
                400: "{db_type} is not one of mongodb, dynamodb, clickhouse.",
                401: "X-API-Key is missing, not an ingest key, unknown or revoked.",
                403: "The batch's project is not the ingest key's project: nothing stored.",
                409: "{db_type} is not the active store: GET /api/v1/db_type and resend.",
                413: "Body, event count or one event over the limits.",
                422: "The body is not JSON or does not match the schema.",
                429: "Too many failed authentications from this address, or the key or its project is over its "
                "quota (events per second, bytes in flight): nothing accepted, retry after Retry-After seconds.",
                503: "JetStream did not acknowledge in time, or the key could not be verified: nothing accepted, "
                "retry later (Retry-After).",
            }
        ),
    },
)
async def store_events(db_type: str, request: Request, ingest: IngestDep) -> JSONResponse:
    limits = ingest.settings.ingest
    principal: IngestPrincipal | None = None
    if ingest.keys is not None:
        try:
            principal = await ingest.keys.verify(
                request.headers.get("x-api-key"), request.client.host if request.client else None
            )
        except TooManyFailures as exc:
            limited = error_response(429, "rate_limited", str(exc))
            limited.headers["Retry-After"] = str(exc.retry_after_s)
            return limited
        except KeyRejected as exc:
            return error_response(401, "unauthorized", str(exc))
        except VerifierUnavailable as exc:
            return _unavailable(f"ingest keys cannot be verified now, retry later ({exc})")
    if db_type not in DB_TYPES:
        return error_response(
            400, "unknown_db_type", f"unknown db_type {db_type!r}; one of {', '.join(DB_TYPES)}"
        )
    active = ingest.db_type  # read once: the batch is routed to the store this request was checked against
    if db_type != active:
        return error_response(
            409,
            "db_type_mismatch",
            f"this backend stores into {active}, not {db_type}; GET /api/v1/db_type and resend",
            configured=active,
        )
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limits.max_body_bytes:
        return _too_large(f"body of {declared} bytes exceeds the cap of {limits.max_body_bytes} bytes")
    quotas = ingest.quotas  # None with ingest.auth = "open": no keys to be fair between
    if quotas is None or principal is None:
        return await _receive(request, ingest, principal, active)
    key, project = principal.key_id, principal.project_id
    size = int(declared) if declared is not None and declared.isdigit() else limits.max_body_bytes
    try:  # held until the batch is queued or refused: a slow or huge sender cannot take everyone's room
        quotas.check_empty(key, project)  # an empty bucket: refused before the body costs anything
        quotas.reserve_bytes(key, project, size)
    except QuotaExceeded as exc:
        return _over_quota(exc)
    try:
        return await _receive(request, ingest, principal, active)
    finally:
        quotas.release_bytes(key, project, size)


async def _receive(
    request: Request, ingest: IngestDep, principal: IngestPrincipal | None, active: str
) -> JSONResponse:
    """Read, check and queue the body of a POST whose key, store and size were accepted."""
    limits = ingest.settings.ingest
    body = await _read_capped(request, limits.max_body_bytes)
    if body is None:
        return _too_large(f"body exceeds the cap of {limits.max_body_bytes} bytes")
    try:
        raw = json.loads(body)
    except ValueError as exc:
        raise RequestValidationError(
            [{"loc": ("body",), "msg": f"invalid JSON: {exc}", "type": "json"}]
        ) from None
    except RecursionError:
        raise RequestValidationError(
            [{"loc": ("body",), "msg": "invalid JSON: nested too deeply", "type": "json"}]
        ) from None
    where = unstorable_at(raw, nul_in_keys=True) if _may_be_unstorable(body) else None
    if (
        where is not None
    ):  # would fail to serialise for JetStream (a 503 retried forever) or to store in MongoDB
        raise RequestValidationError(
            [
                {
                    "loc": ("body", *where.split(".")) if where else ("body",),
                    "msg": _UNSTORABLE,
                    "type": "string",
                }
            ]
        )
    events = raw.get("events") if isinstance(raw, dict) else None
    if isinstance(events, list) and len(events) > limits.max_events:
        return _too_large(
            f"{len(events)} events in one request; the cap is {limits.max_events}: split the batch"
        )
    try:
        batch = GuardrailBatch.model_validate_json(body)  # same rules, ~4x faster than from the parsed dict
    except ValidationError as exc:
        raise RequestValidationError(_locate(exc.errors())) from None
    if (
        principal is not None
        and principal.project_id is not None
        and batch.run.project_id != principal.project_id
    ):
        return error_response(
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
            return _over_quota(exc)
    try:
        accepted = await ingest.accept(
            batch, db_type=active, ingest_key_id=principal.key_id if principal else None
        )
    except EventTooLargeError as exc:
        return _too_large(str(exc))
    except QueueUnavailableError as exc:
        return _unavailable(f"event queue unavailable, retry later ({exc})")
    return JSONResponse(accepted.model_dump(), status_code=202)


@router.get("/status")
async def status(ingest: IngestDep) -> dict[str, Any]:
    """Where events go and what the sink workers of this replica did since start."""
    stats = ingest.worker_stats
    return {
        "db_type": ingest.db_type,
        "active": ingest.active.state.as_json(),
        "table": ingest.settings.sink.table,
        "stream": ingest.settings.jetstream.stream,
        "workers": ingest.workers,
        "schema_ready": ingest.stores.ready() if ingest.stores is not None else stats.schema_ready,
        "batches": stats.batches,
        "inserted": stats.inserted,
        "duplicates": stats.duplicates,
        "store_errors": stats.store_errors,
        "poison": stats.poison,
        "refused": stats.refused,
        "dead_lettered": stats.dead_lettered,
        "dropped": stats.dropped,
        # Only whether a store error happened: its text can name store hosts, users and tables, and this page
        # is unauthenticated (review finding L8); the text is in the service's log.
        "last_error": "a store error: see the guardrail-ingest log" if stats.last_error else None,
    }


_RAW_SURROGATE = re.compile(rb"\xed[\xa0-\xbf]")  # a surrogate code point encoded as UTF-8


def _may_be_unstorable(body: bytes) -> bool:
    """False when no string of this JSON body can hold a lone surrogate or a NUL, so the walk over every string
    (the costliest step of a POST) can be skipped: in UTF-8 JSON those come only from a ``\\u`` escape or a
    surrogate's raw bytes (json.loads decodes with surrogatepass; a raw NUL is refused as a control character)."""
    if json.detect_encoding(body) != "utf-8":
        return True
    return b"\\u" in body or _RAW_SURROGATE.search(body) is not None


def _unavailable(message: str) -> JSONResponse:
    unavailable = error_response(503, "unavailable", message)
    unavailable.headers["Retry-After"] = "1"
    return unavailable


def _over_quota(exc: QuotaExceeded) -> JSONResponse:
    limited = error_response(429, "rate_limited", str(exc))
    limited.headers["Retry-After"] = str(exc.retry_after_s)
    return limited


def _too_large(message: str) -> JSONResponse:
    return error_response(413, "payload_too_large", message)


async def _read_capped(request: Request, cap: int) -> bytes | None:
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > cap:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def _locate(errors: list[Any]) -> list[Any]:
    return [{**e, "loc": ("body", *e.get("loc", ()))} for e in errors]
