"""guardrail-ingest's bus handlers as FastStream subscribers, on FastStream's in-memory TestNatsBroker.

What each handler does with what it hears: a revocation empties the key cache, an activation switches the active
store, a read request gets its answer or an ``ErrorReply``. On a real nats-server: tests/integration
(test_ingest_keys_reconnect.py, test_active_store_switch.py, test_run_reads.py,
test_under_deploy_nats_permissions.py) and tests/e2e/test_ingest_keys.py."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from faststream.nats import NatsBroker, TestNatsBroker

from stockade.contracts import ApiKeyRevoked, DbConfigActivated, IngestKeyQuery, IngestKeyVerdict, subjects
from stockade.contracts.replies import ErrorReply
from stockade.guardrail_ingest.active_store import ActiveStore, ActiveStoreFollower
from stockade.guardrail_ingest.ingest_keys import IngestKeyVerifier, KeyRejected
from stockade.guardrail_ingest.run_reads import QUEUE, RunReads
from stockade.guardrail_ingest.settings import ActiveStoreSettings, IngestSettings
from stockade.guardrail_ingest.sinks.base import SinkError
from stockade.runtime.bus import make_broker, raw_body
from stockade.runtime.settings import NatsSettings

KEY = "stk_" + "C" * 50
KEY_ID = KEY[4:16]
T0 = datetime(2026, 11, 25, 1, 0, tzinfo=UTC)


def new_broker() -> NatsBroker:
    return make_broker(NatsSettings(), name="guardrail-ingest")


def subscribers(broker: NatsBroker) -> dict[str, str]:
    """Subject -> queue group of each subscriber declared on ``broker``."""
    return {sub.subject.broker_address: sub.queue for sub in broker.subscribers}  # type: ignore[attr-defined]


class KeyOwner:
    """model-api's answers to apikey.cmd.verify_ingest.v1, on the same in-memory broker."""

    def __init__(self, broker: NatsBroker) -> None:
        self.questions: list[str] = []
        self.revoked: set[str] = set()

        @broker.subscriber(subjects.APIKEY_CMD_VERIFY_INGEST, decoder=raw_body)
        async def answer(body: bytes) -> bytes:
            query = IngestKeyQuery.model_validate_json(body)
            self.questions.append(query.key_id)
            valid = query.key_id not in self.revoked
            verdict = IngestKeyVerdict(
                valid=valid,
                reason="ingest key" if valid else "the key is revoked",
                key_id=query.key_id,
                project_id="p-1" if valid else None,
            )
            return verdict.model_dump_json().encode()


def revocation(key_id: str) -> bytes:
    return ApiKeyRevoked(key_id=key_id, owner_id="u-1").model_dump_json().encode()


async def test_a_revocation_event_empties_the_cached_key() -> None:
    broker = new_broker()
    owner = KeyOwner(broker)
    verifier = IngestKeyVerifier(IngestSettings(key_cache_s=300))
    verifier.declare(broker)
    assert subscribers(broker)[subjects.APIKEY_REVOKED] == ""  # no queue group: every replica hears it
    async with TestNatsBroker(broker) as test_broker:
        assert (await verifier.verify(KEY)).project_id == "p-1"
        assert (await verifier.verify(KEY)).project_id == "p-1"
        assert owner.questions == [KEY_ID]  # the second answer came from the cache

        owner.revoked.add(KEY_ID)
        await test_broker.publish(revocation(KEY_ID), subjects.APIKEY_REVOKED)
        with pytest.raises(KeyRejected, match="revoked"):
            await verifier.verify(KEY)
    assert owner.questions == [KEY_ID, KEY_ID]  # asked again after the revocation


async def test_a_revocation_of_another_key_or_a_malformed_one_keeps_the_cache() -> None:
    broker = new_broker()
    owner = KeyOwner(broker)
    verifier = IngestKeyVerifier(IngestSettings(key_cache_s=300))
    verifier.declare(broker)
    async with TestNatsBroker(broker) as test_broker:
        await verifier.verify(KEY)
        await test_broker.publish(revocation("OTHERKEYID00"), subjects.APIKEY_REVOKED)
        await test_broker.publish(b"not json", subjects.APIKEY_REVOKED)
        await verifier.verify(KEY)
    assert owner.questions == [KEY_ID]


def activation(db_type: str | None, minutes: int, schema_version: int = 1) -> bytes:
    event = DbConfigActivated(
        db_config_id=f"cfg-{db_type}",
        db_type=db_type,
        name=f"{db_type} store",
        activated_at=T0 + timedelta(minutes=minutes),
        schema_version=schema_version,
    )
    return event.model_dump_json().encode()


async def test_an_activation_event_switches_the_active_store() -> None:
    changed: list[str] = []
    store = ActiveStore("mongodb", on_change=lambda s: changed.append(s.db_type))
    broker = new_broker()
    ActiveStoreFollower(store, ActiveStoreSettings()).declare(broker)
    assert subscribers(broker)[subjects.DBCONFIG_ACTIVATED] == ""  # every replica follows every activation
    async with TestNatsBroker(broker) as test_broker:
        await test_broker.publish(activation("dynamodb", 5), subjects.DBCONFIG_ACTIVATED)
        assert (store.db_type, store.state.source, store.state.db_config_id) == (
            "dynamodb",
            "event",
            "cfg-dynamodb",
        )
        await test_broker.publish(activation("clickhouse", 1), subjects.DBCONFIG_ACTIVATED)  # older
        await test_broker.publish(b"{not json", subjects.DBCONFIG_ACTIVATED)
        await test_broker.publish(activation("mongodb", 9, schema_version=2), subjects.DBCONFIG_ACTIVATED)
        assert store.db_type == "dynamodb"  # older, undecodable, newer schema (asks model-api): no change
        await test_broker.publish(activation("clickhouse", 10), subjects.DBCONFIG_ACTIVATED)
    assert store.db_type == "clickhouse"
    assert changed == ["dynamodb", "clickhouse"]


class _NoStore:
    """The run store as the router sees it when it cannot be built, or when it breaks unexpectedly."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    async def sink_for(self, kind: str) -> object:
        raise self.error


def reads_broker(stores: _NoStore) -> NatsBroker:
    broker = new_broker()
    RunReads(stores, lambda: "clickhouse").declare(broker, lambda: 1 << 20)  # type: ignore[arg-type]
    return broker


async def ask_reads(broker: NatsBroker, body: bytes) -> ErrorReply:
    response = await broker.request(body, subjects.GUARDRAIL_CMD_READ_RUNS, timeout=5)
    return ErrorReply.model_validate_json(response.body)


NO_STORE = _NoStore(SinkError("clickhouse: no URL"))
LIST = (
    b'{"command": "list_runs", "scope": {"projects": ["p"]},'
    b' "query": {"since": "2026-01-01T00:00:00Z", "until": "2026-01-02T00:00:00Z"}}'
)


def test_reads_are_a_queue_group_subscriber() -> None:
    assert (
        subscribers(reads_broker(NO_STORE))[subjects.GUARDRAIL_CMD_READ_RUNS] == QUEUE
    )  # replicas share them


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b"not json", "invalid_request"),
        (b'{"sql": "SELECT 1"}', "invalid_request"),  # no query text is ever run
        (b'{"read_id": "r", "sql": "SELECT 1"}', "invalid_request"),  # the v1 request
        (b'{"command": "list_runs", "sql": "SELECT 1"}', "invalid_request"),
        (LIST, "unavailable"),  # a typed command, but the store cannot be reached
    ],
)
async def test_a_read_request_it_cannot_answer_gets_an_error_reply(body: bytes, code: str) -> None:
    async with TestNatsBroker(reads_broker(NO_STORE)) as broker:
        reply = await ask_reads(broker, body)
    assert reply.error.code == code


async def test_a_store_that_breaks_unexpectedly_is_answered_unavailable() -> None:
    async with TestNatsBroker(reads_broker(_NoStore(RuntimeError("the store broke")))) as broker:
        reply = await ask_reads(broker, LIST)
    assert (reply.error.code, reply.error.message) == ("unavailable", "the run store cannot be read")
