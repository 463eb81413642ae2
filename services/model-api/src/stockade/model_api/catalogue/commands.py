"""Request/reply on NATS: ``model.cmd.get.v1`` (one model, or a provider's models), ``dbconfig.cmd.active.v1``
(the active database configuration, which guardrail-ingest asks for at start-up and to resync) and
``apikey.cmd.verify_ingest.v1`` (whether a per-project ingest key is valid, asked by guardrail-ingest).

Each handler is the rule with no transport: a ``stockade.contracts`` request model in, its reply model out, or
an ``ErrorReply`` for a domain error (``not_found``, ``invalid_request``). :func:`declare_commands` puts them on
the service's broker with :func:`stockade.runtime.bus.command` (one queue group, so replicas share the
requests), which refuses a request that does not validate (``invalid_request``) and answers ``unavailable``
when the database is down, so an asker never waits for a timeout."""

from __future__ import annotations

import logging
from functools import partial

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
from stockade.runtime.bus import Command, NoRequest, command, problems

log = logging.getLogger(__name__)
QUEUE = "model-api"


_error = ErrorReply.of


def _invalid_lookup(exc: ValidationError) -> str:
    return f"the request must be a JSON object of strings ({problems(exc)})"


def model_lookup(sessions: async_sessionmaker[AsyncSession]) -> Command[ModelGetQuery, ModelGetReply]:
    """``model.cmd.get.v1``, answered by :func:`find_models`."""
    return Command(
        MODEL_CMD_GET,
        ModelGetQuery,
        partial(find_models, sessions),
        unavailable="the model catalogue is unavailable",
        invalid=_invalid_lookup,
    )


async def answer_get(
    sessions: async_sessionmaker[AsyncSession], payload: bytes
) -> ModelGetReply | ErrorReply:
    """The typed reply to one ``model.cmd.get.v1`` body, without a broker."""
    return await model_lookup(sessions).answer(payload)


async def find_models(
    sessions: async_sessionmaker[AsyncSession], query: ModelGetQuery
) -> ModelGetReply | ErrorReply:
    """One model (``provider`` and ``model_id``) or a list, of the active configuration or ``db_config_id``."""
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


async def active_config(sessions: async_sessionmaker[AsyncSession], _: NoRequest) -> ActiveDbConfig:
    """The active configuration (the migrations make one active; raises ``NoActiveConfig`` if none is)."""
    async with sessions() as session:
        config = await dbconfigs.active_config(session)
    return ActiveDbConfig(
        db_config_id=config.id,
        db_type=config.db_type.value,
        name=config.name,
        activated_at=config.activated_at,
    )


async def ingest_key_verdict(
    sessions: async_sessionmaker[AsyncSession], query: IngestKeyQuery
) -> IngestKeyVerdict:
    """The verdict on one ingest key ``{"key_id", "key_hash"}``, from current rows (stockade.identity)."""
    async with sessions() as session:
        check = await verify_ingest_key(session, query.key_id, query.key_hash)
    return IngestKeyVerdict(
        valid=check.valid, reason=check.reason, key_id=check.key_id, project_id=check.project_id
    )


def declare_commands(broker: NatsBroker, sessions: async_sessionmaker[AsyncSession]) -> None:
    """Declare the three request/reply subscribers on ``broker`` (started with the broker)."""
    model_lookup(sessions).declare(broker, queue=QUEUE, title="model-api model lookup")
    command(
        broker,
        DBCONFIG_CMD_ACTIVE,
        NoRequest,
        partial(active_config, sessions),
        queue=QUEUE,
        title="model-api active config",
        unavailable="the database configurations are unavailable",
    )
    command(
        broker,
        APIKEY_CMD_VERIFY_INGEST,
        IngestKeyQuery,
        partial(ingest_key_verdict, sessions),
        queue=QUEUE,
        title="model-api ingest key",
        unavailable="the key store is unavailable",
        invalid=lambda _: "expected {key_id, key_hash (SHA-256 hex)}",
    )
