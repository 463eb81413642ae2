"""Request/reply on NATS: ``model.cmd.get.v1`` (one model, or a provider's models), ``dbconfig.cmd.active.v1``
(the active database configuration, which guardrail-ingest asks for at start-up and to resync) and
``apikey.cmd.verify_ingest.v1`` (whether a per-project ingest key is valid, asked by guardrail-ingest)."""

from __future__ import annotations

import json
import logging
from typing import Any

from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from pydantic import ValidationError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from stockade.contracts import ActiveDbConfig, IngestKeyQuery, IngestKeyVerdict
from stockade.contracts.subjects import APIKEY_CMD_VERIFY_INGEST, DBCONFIG_CMD_ACTIVE, MODEL_CMD_GET
from stockade.identity import verify_ingest_key
from stockade.model_api import catalogue, dbconfigs
from stockade.model_api.errors import CatalogueError
from stockade.model_api.schemas import normalise_provider

log = logging.getLogger(__name__)
QUEUE = "model-api"


def _error(code: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message}}


async def answer_get(sessions: async_sessionmaker[AsyncSession], payload: bytes) -> dict[str, Any]:
    """The reply to one request ``{"provider", "model_id"?, "db_config_id"?}``."""
    try:
        request = json.loads(payload or b"{}")
    except ValueError:
        return _error("invalid_request", "the request must be a JSON object")
    if not isinstance(request, dict):
        return _error("invalid_request", "the request must be a JSON object")
    provider_raw, model_id, config_id = (request.get(k) for k in ("provider", "model_id", "db_config_id"))
    try:
        provider = normalise_provider(provider_raw) if provider_raw is not None else None
    except ValueError as exc:
        return _error("invalid_request", f"provider: {exc}")
    if model_id is not None and (not isinstance(model_id, str) or provider is None):
        return _error("invalid_request", "model_id must be a string and needs a provider")
    if config_id is not None and not isinstance(config_id, str):
        return _error("invalid_request", "db_config_id must be a string")
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
                return {
                    "dbConfig": config.as_json(),
                    "provider": provider,
                    "model": model.record(),
                    "priceHistory": history,  # an addition: effective-dated prices, oldest first
                }
            groups = await catalogue.list_models(session, config.id, provider)
        except CatalogueError as exc:
            return _error("not_found", str(exc))
    return {
        "dbConfig": config.as_json(),
        "providers": [{"provider": g.provider, "models": [m.record() for m in g.models]} for g in groups],
    }


async def serve_model_get(nc: NatsClient, sessions: async_sessionmaker[AsyncSession]) -> Subscription:
    async def handler(msg: Msg) -> None:
        try:
            reply = await answer_get(sessions, msg.data)
        except Exception as exc:  # the database is down: answer instead of letting the requester time out
            log.warning("model.cmd.get.v1 failed: %s: %s", type(exc).__name__, exc)
            reply = _error("unavailable", "the model catalogue is unavailable")
        await msg.respond(json.dumps(reply).encode())

    return await nc.subscribe(MODEL_CMD_GET, queue=QUEUE, cb=handler)


async def answer_active(sessions: async_sessionmaker[AsyncSession]) -> ActiveDbConfig:
    """The active configuration (an empty database gets its default one, as on the console)."""
    async with sessions() as session:
        config = await dbconfigs.active_config(session)
    return ActiveDbConfig(
        db_config_id=config.id,
        db_type=config.db_type.value,
        name=config.name,
        activated_at=config.activated_at,
    )


async def serve_dbconfig_active(nc: NatsClient, sessions: async_sessionmaker[AsyncSession]) -> Subscription:
    async def handler(msg: Msg) -> None:
        try:
            reply = (await answer_active(sessions)).model_dump_json().encode()
        except Exception as exc:  # the database is down: say so rather than let the requester time out
            log.warning("%s failed: %s: %s", DBCONFIG_CMD_ACTIVE, type(exc).__name__, exc)
            reply = json.dumps(_error("unavailable", "the database configurations are unavailable")).encode()
        await msg.respond(reply)

    return await nc.subscribe(DBCONFIG_CMD_ACTIVE, queue=QUEUE, cb=handler)


async def answer_ingest_key(sessions: async_sessionmaker[AsyncSession], payload: bytes) -> dict[str, Any]:
    """The verdict on one ingest key ``{"key_id", "key_hash"}``, from current rows (stockade.identity)."""
    try:
        query = IngestKeyQuery.model_validate_json(payload or b"{}")
    except ValidationError:
        return _error("invalid_request", "expected {key_id, key_hash (SHA-256 hex)}")
    async with sessions() as session:
        check = await verify_ingest_key(session, query.key_id, query.key_hash)
    verdict = IngestKeyVerdict(
        valid=check.valid, reason=check.reason, key_id=check.key_id, project_id=check.project_id
    )
    return verdict.model_dump()


async def serve_ingest_key_verify(nc: NatsClient, sessions: async_sessionmaker[AsyncSession]) -> Subscription:
    async def handler(msg: Msg) -> None:
        try:
            reply = await answer_ingest_key(sessions, msg.data)
        except Exception as exc:  # the database is down: say so; guardrail-ingest fails closed (503)
            log.warning("%s failed: %s: %s", APIKEY_CMD_VERIFY_INGEST, type(exc).__name__, exc)
            reply = _error("unavailable", "the key store is unavailable")
        await msg.respond(json.dumps(reply).encode())

    return await nc.subscribe(APIKEY_CMD_VERIFY_INGEST, queue=QUEUE, cb=handler)
