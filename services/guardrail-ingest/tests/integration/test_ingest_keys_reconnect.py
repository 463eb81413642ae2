"""A revocation published while guardrail-ingest was away from NATS is not lost: after a reconnection the key
cache starts empty, so the next request asks model-api again (here a responder on its own connection). The verifier
runs as in the service: its revocation subscriber and its questions on a FastStream broker that owns the
connection."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlparse

import nats
import pytest

from stockade.contracts import IngestKeyQuery, IngestKeyVerdict, subjects
from stockade.contracts.nats_sync import sync_with_server
from stockade.guardrail_ingest.ingest_keys import IngestKeyVerifier, VerifierUnavailable
from stockade.guardrail_ingest.settings import IngestSettings
from stockade.runtime.bus import connect_broker, make_broker, stop_broker
from stockade.runtime.settings import NatsSettings

pytestmark = [pytest.mark.nats]
KEY = "stk_" + "B" * 50


async def test_the_key_cache_starts_empty_after_a_nats_reconnection(
    nats_server_factory: Any, kit: Any
) -> None:
    server = nats_server_factory()
    port = urlparse(str(server.url)).port
    options = {"reconnect_time_wait": 0.1, "max_reconnect_attempts": -1}
    nats_settings = NatsSettings(url=str(server.url), startup_wait_s=5)
    broker = make_broker(nats_settings, name="guardrail-ingest", reconnect_time_wait=0.1)
    ingest_nc = await connect_broker(broker, nats_settings)
    owner_nc = await nats.connect(str(server.url), **options)
    questions: list[str] = []

    async def answer(msg: Any) -> None:
        query = IngestKeyQuery.model_validate_json(msg.data)
        questions.append(query.key_id)
        verdict = IngestKeyVerdict(valid=True, reason="ingest key", key_id=query.key_id, project_id="p-1")
        await msg.respond(verdict.model_dump_json().encode())

    await owner_nc.subscribe(subjects.APIKEY_CMD_VERIFY_INGEST, cb=answer)
    await sync_with_server(owner_nc)
    # a bus answer from this very process: 0.5 s was short on a loaded runner (a timed-out question counts too)
    verifier = IngestKeyVerifier(IngestSettings(key_cache_s=300, key_verify_timeout_s=5))
    verifier.declare(broker, ingest_nc)
    await broker.start()
    try:
        assert (await verifier.verify(KEY)).project_id == "p-1"
        assert (await verifier.verify(KEY)).project_id == "p-1" and len(questions) == 1  # cached

        server.stop()  # the server is gone for a moment (events published meanwhile would be missed)
        nats_server_factory(port=port)

        async def asked_again() -> bool:
            if not (ingest_nc.is_connected and owner_nc.is_connected):
                return False
            try:
                await verifier.verify(KEY)
            except VerifierUnavailable:  # the owner's subscription is not back yet (or its answer was late)
                return False
            return len(questions) >= 2  # asked again, not answered from the cache (1 question)

        assert await kit.wait_for(asked_again, within_s=15)
        assert ingest_nc.stats["reconnects"] >= 1
    finally:
        await stop_broker(broker, 5)
        await owner_nc.close()
