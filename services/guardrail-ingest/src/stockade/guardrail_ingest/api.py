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

from typing import Any

from fastapi import APIRouter, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from stockade.contracts.ingest_wire import DB_TYPES, BatchAccepted, DbTypeReply, GuardrailBatch
from stockade.guardrail_ingest.batches import (
    Invalid,
    Refused,
    over_quota,
    store_batch,
    too_large,
    unavailable,
)
from stockade.guardrail_ingest.deps import IngestDep
from stockade.guardrail_ingest.ingest_keys import (
    IngestPrincipal,
    KeyRejected,
    TooManyFailures,
    VerifierUnavailable,
)
from stockade.guardrail_ingest.quotas import QuotaExceeded
from stockade.runtime.body import BodyTooLargeError, documented_body, read_limited
from stockade.runtime.errors import error_response, error_responses

router = APIRouter(prefix="/api/v1", tags=["guardrail storage"])


@router.get("/db_type", response_model=DbTypeReply)
async def db_type(ingest: IngestDep) -> DbTypeReply:
    return DbTypeReply(db_type=ingest.db_type)


@router.post(
    "/guardrails/{db_type}",
    status_code=202,
    response_model=None,
    openapi_extra=documented_body(GuardrailBatch),
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
            return _refused(Refused(429, "rate_limited", str(exc), retry_after_s=exc.retry_after_s))
        except KeyRejected as exc:
            return error_response(401, "unauthorized", str(exc))
        except VerifierUnavailable as exc:
            return _refused(unavailable(f"ingest keys cannot be verified now, retry later ({exc})"))
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
        return _refused(
            too_large(f"body of {declared} bytes exceeds the cap of {limits.max_body_bytes} bytes")
        )
    quotas = ingest.quotas  # None with ingest.auth = "open": no keys to be fair between
    if quotas is None or principal is None:
        return await _receive(request, ingest, principal, active)
    key, project = principal.key_id, principal.project_id
    size = int(declared) if declared is not None and declared.isdigit() else limits.max_body_bytes
    try:  # held until the batch is queued or refused: a slow or huge sender cannot take everyone's room
        quotas.check_empty(key, project)  # an empty bucket: refused before the body costs anything
        quotas.reserve_bytes(key, project, size)
    except QuotaExceeded as exc:
        return _refused(over_quota(exc))
    try:
        return await _receive(request, ingest, principal, active)
    finally:
        quotas.release_bytes(key, project, size)


async def _receive(
    request: Request, ingest: IngestDep, principal: IngestPrincipal | None, active: str
) -> JSONResponse:
    """Read the body of a POST whose key, store and size were accepted, and hand it to :func:`store_batch`."""
    try:
        body = await read_limited(request, ingest.settings.ingest.max_body_bytes)
    except BodyTooLargeError as exc:
        return _refused(too_large(str(exc)))
    result = await store_batch(ingest, body, principal, active)
    if isinstance(result, BatchAccepted):
        return JSONResponse(result.model_dump(), status_code=202)
    if isinstance(result, Invalid):
        raise RequestValidationError(result.errors)
    return _refused(result)


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


def _refused(refused: Refused) -> JSONResponse:
    response = error_response(refused.status, refused.code, refused.message)
    if refused.retry_after_s is not None:
        response.headers["Retry-After"] = str(refused.retry_after_s)
    return response
