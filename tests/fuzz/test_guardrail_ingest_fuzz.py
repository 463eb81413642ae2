"""schemathesis against guardrail-ingest's OpenAPI (spec 4.3): the real app on a real NATS JetStream server of
its own, with the deployment-wide ingest key (``ingest.api_key``, accepted for every project without asking
model-api; sent as X-API-Key like the library's sink does; per-project keys: tests/e2e/test_ingest_keys.py), and a sink
worker storing the accepted batches into ClickHouse (chdb or ``CLICKHOUSE_URL``).

``{db_type}`` is the active store's, so generated batches get past the routing check into validation and
JetStream. Afterwards every accepted batch must be stored: an accepted batch that the worker drops as
undecodable, or a store refuses, is a 202 that lost data. Checks: no 5xx, status code documented, content type documented, body
matches the documented schema.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import requests
import schemathesis

from stockade.guardrail_ingest.main import create_app
from stockade.guardrail_ingest.settings import (
    ActiveStoreSettings,
    GuardrailIngestSettings,
    IngestSettings,
    SinkSettings,
    StreamSettings,
)
from stockade.runtime.settings import DatabaseSettings, NatsSettings
from stockade.testing.names import make_unique_name

MAX_EXAMPLES = 25  # per operation, fuzzing phase; the coverage phase adds its own boundary cases
INGEST_KEY = "fuzz-ingest-key-0123456789"
ACTIVE = "clickhouse"


def _openapi() -> dict[str, Any]:
    """The schema the app serves at /openapi.json (built without connecting anywhere)."""
    return create_app(GuardrailIngestSettings()).openapi()


CONFIG = {
    "seed": 16,
    "generation": {"deterministic": True, "max-examples": MAX_EXAMPLES, "database": "none"},
    # Every generated batch goes to the active store, so bodies reach validation and JetStream (the routing
    # answers, 400 and 409, are covered by tests/integration/test_ingest_api.py).
    "parameters": {"path.db_type": ACTIVE},
    "phases": {"examples": {"enabled": False}, "stateful": {"enabled": False}},
    "checks": {
        "enabled": False,
        "not_a_server_error": {"enabled": True},
        "status_code_conformance": {"enabled": True},
        "content_type_conformance": {"enabled": True},
        "response_schema_conformance": {"enabled": True},
    },
}
schema = schemathesis.openapi.from_dict(_openapi(), config=schemathesis.Config.from_dict(CONFIG))


@dataclass
class World:
    base_url: str
    queued: list[str]  # batch_id of every 202 that queued a new batch


@pytest.fixture(scope="module")
def world(nats_server_factory, clickhouse_dsn: str, serve_app) -> Iterator[World]:
    settings = GuardrailIngestSettings(
        nats=NatsSettings(url=str(nats_server_factory().url), startup_wait_s=5),
        db=DatabaseSettings(url="sqlite+aiosqlite:///:memory:"),
        sink=SinkSettings(kind=ACTIVE, clickhouse_url=clickhouse_dsn, table=make_unique_name("fuzz_events")),
        active=ActiveStoreSettings(follow=False),
        ingest=IngestSettings(api_key=INGEST_KEY),
        jetstream=StreamSettings(workers=1, fetch_timeout_s=0.3, retry_delay_s=0.3),
    )
    with serve_app(create_app(settings)) as base_url:
        yield World(base_url, [])


@schema.parametrize()
def test_guardrail_ingest_conforms_to_its_openapi(
    case, world: World, http: requests.Session, answers
) -> None:
    response = case.call_and_validate(
        base_url=world.base_url, session=http, headers={"X-API-Key": INGEST_KEY}
    )
    answers.setdefault(case.operation.label, []).append(response.status_code)
    if response.status_code == 202 and not response.json()["duplicate"]:
        world.queued.append(response.json()["batch_id"])


def test_print_answers(answers):
    import collections

    for k, v in answers.items():
        print(k, sorted(collections.Counter(v).items()))


def test_every_accepted_batch_was_stored(world: World, http: requests.Session) -> None:
    """A 202 promises the batch is stored: the worker stores every one, none undecodable or refused."""
    assert world.queued, "run with the fuzz test above"
    deadline = time.monotonic() + 60
    while True:
        status = http.get(f"{world.base_url}/api/v1/status", timeout=30).json()
        if status["batches"] >= len(world.queued) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    problems = {k: status[k] for k in ("poison", "store_errors", "refused", "dead_lettered", "last_error")}
    assert status["batches"] == len(world.queued), status
    assert problems == {"poison": 0, "store_errors": 0, "refused": 0, "dead_lettered": 0, "last_error": None}
