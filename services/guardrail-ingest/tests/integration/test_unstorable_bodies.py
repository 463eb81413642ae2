"""Bodies no store can take are a 422 naming the field, not a 503 the library retries forever or a 500:
a lone surrogate (json.loads accepts "\\ud800"; serialising it for JetStream fails), a NUL in an object key
(MongoDB's BSON keys are C strings: the sink worker would redeliver the batch forever), nesting past the parser.
"""

from __future__ import annotations

import json

import httpx
import pytest

from stockade.guardrail_ingest.settings import SinkSettings

pytestmark = [pytest.mark.nats]

URL = "/api/v1/guardrails/mongodb"


async def test_unstorable_bodies_are_refused_with_422_and_nothing_is_queued(fresh_nats_url, kit):
    settings = kit.settings(fresh_nats_url, SinkSettings(kind="mongodb"), workers=0)
    bodies = []
    for place, value in (
        ("payload", {"text": "a\ud800"}),
        ("payload", {"key\udc00": 1}),
        ("payload", {"nested": {"k\x00": "v"}}),
        ("session_id", "s\ud800"),
    ):
        body = kit.batch_body(1)
        body["events"][0][place] = value
        bodies.append(json.dumps(body).encode())
    bodies.append(b'{"run": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")
    headers = {"content-type": "application/json"}
    async with kit.served(settings) as base, httpx.AsyncClient(base_url=base) as client:
        for body in bodies:
            reply = await client.post(URL, content=body, headers=headers)
            assert reply.status_code == 422, reply.text
            assert reply.json()["error"]["code"] == "invalid_request"
        fine = kit.batch_body(1)
        fine["events"][0]["payload"] = {"text": "a\x00b"}  # a NUL in a value is fine (BSON strings hold one)
        accepted = await client.post(URL, json=fine)
        assert accepted.status_code == 202, accepted.text
        assert (await client.post("/api/v1/guardrails/mongo%00db", json=fine)).status_code == 400
