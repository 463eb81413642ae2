"""guardrail-ingest answers with the runtime's security headers (an API no browser should render)."""

from __future__ import annotations

import httpx
import pytest

from stockade.guardrail_ingest.settings import SinkSettings
from stockade.runtime.security_headers import DEFAULT_HEADERS

pytestmark = [pytest.mark.nats]


async def test_every_answer_carries_the_security_headers(fresh_nats_url, kit):
    settings = kit.settings(fresh_nats_url, SinkSettings(kind="clickhouse"), workers=0)
    async with kit.served(settings) as base, httpx.AsyncClient(base_url=base) as client:
        answers = [
            await client.get("/api/v1/db_type"),
            await client.get("/healthz"),
            await client.post("/api/v1/guardrails/clickhouse", content=b"{nope"),
            await client.post("/api/v1/guardrails/oracle", json={}),
        ]
    for answer in answers:
        for name, value in DEFAULT_HEADERS.items():
            assert answer.headers[name] == value, (answer.request.url, name)
