"""Request/reply on NATS: ``model.cmd.get.v1`` (one model, or a provider's models), ``dbconfig.cmd.active.v1``
(the active database configuration, which guardrail-ingest asks for at start-up and to resync) and
``apikey.cmd.verify_ingest.v1`` (whether a per-project ingest key is valid, asked by guardrail-ingest).

Every request and reply body is a model of ``stockade.contracts`` (an error answer: ``ErrorReply``), so the
askers read them with the same models and ``libs/contracts/asyncapi.json`` documents them.

The handlers are FastStream subscribers on the service's broker (:func:`declare_commands`, one queue group per
subject so replicas share the requests); each takes the raw request body and answers bytes, validating with the
contract models itself so that a malformed request gets an ``ErrorReply`` rather than no answer."""

from __future__ import annotations

import logging

from faststream.nats import NatsBroker
from pydantic import ValidationError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from stockade.contracts import ActiveDbConfig, IngestKeyQuery, IngestKeyVerdict
from stockade.contracts.replies import ErrorReply, ModelGetQuery, ModelGetReply, PricePoint, ProviderModels
from stockade.contracts.subjects import APIKEY_CMD_VERIFY_INGEST, DBCONFIG_CMD_ACTIVE, MODEL_CMD_GET
from stockade.identity import verify_ingest_key
from stockade.model_api.catalogue import dbconfigs
from stockade.model_api.catalogue import models as catalogue
from stockade.model_api.catalogue.schemas import normalise_provider
from stockade.model_api.errors import CatalogueError
from stockade.runtime.bus import raw_body

log = logging.getLogger(__name__)
QUEUE = "model-api"


_error = ErrorReply.of


async def answer_get(
    sessions: async_sessionmaker[AsyncSession], payload: bytes
) -> ModelGetReply | ErrorReply:
    """The reply to one request (``ModelGetQuery``: ``{"provider"?, "model_id"?, "db_config_id"?}``)."""
    try:
        query = ModelGetQuery.model_validate_json(payload or b"{}")
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'request'}: {e['msg']}" for e in exc.errors(include_url=False)
        )
        return _error("invalid_request", f"the request must be a JSON object of strings ({problems})")
    model_id, config_id = query.model_id, query.db_config_id
    try:
        provider = normalise_provider(query.provider) if query.provider is not None else None
    except ValueError as exc:
        return _error("invalid_request", f"provider: {exc}")
    if model_id is not None and provider is None:
        return _error("invalid_request", "model_id needs a provider")
    async with sessions() as session:
        try:
            config = (
                await dbconfigs.get_config(session, config_id)
                if config_id
                else await dbconfigs.active_config(session)
            )
            if model_id is not None and provider is not None:
                model = await catalogue.get_model(session, config.id, provider, model_id)
                history = await catalogue.price_history(session, config.id, provider, model_id)
                return ModelGetReply(
                    db_config=config.as_json(),
                    provider=provider,
                    model=model.record(),
                    # an addition: effective-dated prices, oldest first
                    price_history=[PricePoint.model_validate(point) for point in history],
                )
            groups = await catalogue.list_models(session, config.id, provider)
        except CatalogueError as exc:
            return _error("not_found", str(exc))
    return ModelGetReply(
        db_config=config.as_json(),
        providers=[
            ProviderModels(provider=g.provider, models=[m.record() for m in g.models]) for g in groups
        ],
    )


async def reply_model_get(sessions: async_sessionmaker[AsyncSession], body: bytes) -> bytes:
    try:
        reply = await answer_get(sessions, body)
    except Exception as exc:  # the database is down: answer instead of letting the requester time out
        log.warning("%s failed: %s: %s", MODEL_CMD_GET, type(exc).__name__, exc)
        reply = _error("unavailable", "the model catalogue is unavailable")
    return reply.to_bytes()


async def answer_active(sessions: async_sessionmaker[AsyncSession]) -> ActiveDbConfig:
    """The active configuration (the migrations make one active; raises ``NoActiveConfig`` if none is)."""
    async with sessions() as session:
        config = await dbconfigs.active_config(session)
    return ActiveDbConfig(
        db_config_id=config.id,
        db_type=config.db_type.value,
        name=config.name,
        activated_at=config.activated_at,
    )


async def reply_dbconfig_active(sessions: async_sessionmaker[AsyncSession]) -> bytes:
    try:
        return (await answer_active(sessions)).model_dump_json().encode()
    except Exception as exc:  # the database is down: say so rather than let the requester time out
        log.warning("%s failed: %s: %s", DBCONFIG_CMD_ACTIVE, type(exc).__name__, exc)
        return _error("unavailable", "the database configurations are unavailable").to_bytes()


async def answer_ingest_key(
    sessions: async_sessionmaker[AsyncSession], payload: bytes
) -> IngestKeyVerdict | ErrorReply:
    """The verdict on one ingest key ``{"key_id", "key_hash"}``, from current rows (stockade.identity)."""
    try:
        query = IngestKeyQuery.model_validate_json(payload or b"{}")
    except ValidationError:
        return _error("invalid_request", "expected {key_id, key_hash (SHA-256 hex)}")
    async with sessions() as session:
        check = await verify_ingest_key(session, query.key_id, query.key_hash)
    return IngestKeyVerdict(
        valid=check.valid, reason=check.reason, key_id=check.key_id, project_id=check.project_id
    )


async def reply_ingest_key(sessions: async_sessionmaker[AsyncSession], body: bytes) -> bytes:
    try:
        reply = await answer_ingest_key(sessions, body)
    except Exception as exc:  # the database is down: say so; guardrail-ingest fails closed (503)
        log.warning("%s failed: %s: %s", APIKEY_CMD_VERIFY_INGEST, type(exc).__name__, exc)
        reply = _error("unavailable", "the key store is unavailable")
    return reply.to_bytes() if isinstance(reply, ErrorReply) else reply.model_dump_json().encode()


def declare_commands(broker: NatsBroker, sessions: async_sessionmaker[AsyncSession]) -> None:
    """Declare the three request/reply subscribers on ``broker`` (started with the broker)."""

    @broker.subscriber(MODEL_CMD_GET, queue=QUEUE, decoder=raw_body, title="model-api model lookup")
    async def on_model_get(body: bytes) -> bytes:
        return await reply_model_get(sessions, body)

    @broker.subscriber(DBCONFIG_CMD_ACTIVE, queue=QUEUE, decoder=raw_body, title="model-api active config")
    async def on_dbconfig_active(_: bytes) -> bytes:
        return await reply_dbconfig_active(sessions)

    @broker.subscriber(APIKEY_CMD_VERIFY_INGEST, queue=QUEUE, decoder=raw_body, title="model-api ingest key")
    async def on_ingest_key(body: bytes) -> bytes:
        return await reply_ingest_key(sessions, body)
