"""model-api's request/reply handlers as FastStream subscribers, on FastStream's in-memory TestNatsBroker.

What an asker sees when its request is malformed or the database is down (answers without a database); the
answers from real rows are tested on a real nats-server and PostgreSQL in tests/integration
(test_dbconfig_on_the_bus.py, test_catalogue_reaches_agents.py, tests/e2e/test_ingest_keys.py)."""

from __future__ import annotations

from typing import Any

import pytest
from faststream.nats import NatsBroker, TestNatsBroker

from stockade.contracts.replies import ErrorReply
from stockade.contracts.subjects import APIKEY_CMD_VERIFY_INGEST, DBCONFIG_CMD_ACTIVE, MODEL_CMD_GET
from stockade.model_api.catalogue.commands import QUEUE, declare_commands
from stockade.runtime.bus import make_broker
from stockade.runtime.settings import NatsSettings


class DatabaseDown:
    """A session factory whose database does not answer."""

    def __call__(self) -> Any:
        raise ConnectionRefusedError("connection refused")


def broker_with_commands() -> NatsBroker:
    broker = make_broker(NatsSettings(), name="model-api")
    declare_commands(broker, DatabaseDown())  # type: ignore[arg-type]
    return broker


async def ask(broker: NatsBroker, subject: str, body: bytes) -> ErrorReply:
    response = await broker.request(body, subject, timeout=5)
    return ErrorReply.model_validate_json(response.body)


async def test_each_command_is_a_queue_group_subscriber() -> None:
    broker = broker_with_commands()
    declared = {sub.subject.broker_address: sub for sub in broker.subscribers}  # type: ignore[attr-defined]
    assert set(declared) == {MODEL_CMD_GET, DBCONFIG_CMD_ACTIVE, APIKEY_CMD_VERIFY_INGEST}
    assert {sub.queue for sub in declared.values()} == {QUEUE}  # replicas share the requests


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b"not json", "the request must be a JSON object of strings"),
        (b'{"provider": 7}', "provider"),
        (b'{"model_id": "gpt-4o"}', "model_id needs a provider"),
        (b'{"provider": "no such provider!"}', "provider:"),
    ],
)
async def test_a_malformed_model_lookup_gets_an_error_reply_without_touching_the_database(
    body: bytes, says: str
) -> None:
    async with TestNatsBroker(broker_with_commands()) as broker:
        reply = await ask(broker, MODEL_CMD_GET, body)
    assert reply.error.code == "invalid_request"
    assert says in reply.error.message


async def test_a_malformed_ingest_key_query_gets_an_error_reply() -> None:
    async with TestNatsBroker(broker_with_commands()) as broker:
        reply = await ask(broker, APIKEY_CMD_VERIFY_INGEST, b'{"key_id": "k"}')
    assert (reply.error.code, reply.error.message) == (
        "invalid_request",
        "expected {key_id, key_hash (SHA-256 hex)}",
    )


@pytest.mark.parametrize(
    ("subject", "body", "says"),
    [
        (MODEL_CMD_GET, b"{}", "the model catalogue is unavailable"),
        (DBCONFIG_CMD_ACTIVE, b"", "the database configurations are unavailable"),
        (APIKEY_CMD_VERIFY_INGEST, b'{"key_id": "k", "key_hash": "' + b"0" * 64 + b'"}', "the key store"),
    ],
)
async def test_with_the_database_down_every_command_answers_unavailable(
    subject: str, body: bytes, says: str
) -> None:
    async with TestNatsBroker(broker_with_commands()) as broker:
        reply = await ask(broker, subject, body)
    assert reply.error.code == "unavailable"  # the asker is told at once instead of timing out
    assert says in reply.error.message
