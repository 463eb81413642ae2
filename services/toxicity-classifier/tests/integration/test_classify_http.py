"""POST /classify over a real socket: the reply shape, the 413/422 refusals, bearer auth and health."""

from __future__ import annotations

import json

import httpx
import pytest

LABELS = {"toxic", "offensive", "non-toxic"}
KEY = "test-bearer-key-0123456789"


def assert_label_list(reply: object) -> list[dict]:
    assert isinstance(reply, list) and len(reply) == 3
    assert {item["label"] for item in reply} == LABELS
    scores = [item["score"] for item in reply]
    assert scores == sorted(scores, reverse=True) and all(0 <= s <= 1 for s in scores)
    assert abs(sum(scores) - 1) < 1e-9
    return reply


async def test_one_text_gets_one_label_list(service_url):
    async with httpx.AsyncClient(base_url=service_url) as client:
        r = await client.post("/classify", json={"inputs": "Have a lovely weekend at the lake!"})
    assert r.status_code == 200, r.text
    assert_label_list(r.json())


async def test_a_batch_gets_one_list_per_text_in_order(service_url):
    texts = ["see you at lunch", "", "shut up, you stupid clown", "the report is attached"]
    async with httpx.AsyncClient(base_url=service_url) as client:
        batch = (await client.post("/classify", json={"inputs": texts})).json()
        singles = [(await client.post("/classify", json={"inputs": t})).json() for t in texts]
    assert len(batch) == len(texts)
    for got, single in zip(batch, singles, strict=True):
        assert assert_label_list(got) == single


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "inputs"),
        ({"inputs": None}, "inputs"),
        ({"inputs": 42}, "inputs"),
        ({"inputs": ["fine", 3]}, "inputs"),
        ({"inputs": []}, "inputs"),
        ({"inputs": ["a", "b", "c", "d", "e"]}, "inputs"),  # max_batch 4
        ({"inputs": "x" * 501}, "inputs"),  # max_chars 500
        ({"inputs": ["ok", "y" * 501]}, "inputs"),
        ({"inputs": "hi", "parameters": {"top_k": 1}}, "parameters"),
        (["hi"], ""),
    ],
)
async def test_bad_bodies_are_422_naming_the_field(service_url, body, field):
    async with httpx.AsyncClient(base_url=service_url) as client:
        r = await client.post("/classify", json=body)
    assert r.status_code == 422, r.text
    error = r.json()["error"]
    assert error["code"] == "invalid_request"
    assert any(p["field"] == field for p in error["details"]["problems"]), error


@pytest.mark.parametrize(
    "raw", [b"not json", b'{"inputs": "unterminated', b"[" * 2000 + b"]" * 2000, b"\xff\xfe"]
)
async def test_unparseable_bodies_are_422(service_url, raw):
    async with httpx.AsyncClient(base_url=service_url) as client:
        r = await client.post("/classify", content=raw, headers={"content-type": "application/json"})
    assert r.status_code == 422, r.text
    assert r.json()["error"]["code"] == "invalid_request"


async def test_limit_messages_say_the_limit(service_url):
    async with httpx.AsyncClient(base_url=service_url) as client:
        long = await client.post("/classify", json={"inputs": ["ok", "y" * 501]})
        many = await client.post("/classify", json={"inputs": ["a"] * 5})
    assert "text 1 has 501 characters; the limit is 500" in long.json()["error"]["message"]
    assert "1 to 4 texts, not 5" in many.json()["error"]["message"]


async def test_a_body_over_the_cap_is_413_declared_or_streamed(service_url):
    big = json.dumps({"inputs": "z" * 5000}).encode()

    async def chunks():
        yield big[:2000]
        yield big[2000:]

    async with httpx.AsyncClient(base_url=service_url) as client:
        declared = await client.post("/classify", content=big, headers={"content-type": "application/json"})
        streamed = await client.post(
            "/classify", content=chunks(), headers={"content-type": "application/json"}
        )
    for r in (declared, streamed):
        assert r.status_code == 413, r.text
        assert r.json()["error"]["code"] == "payload_too_large"


async def test_odd_but_valid_text_is_classified(service_url):
    odd = ["\u0000\ud800 lone surrogate", "😀" * 100, "&amp;&#128514;<b>", " \n\t "]
    async with httpx.AsyncClient(base_url=service_url) as client:
        r = await client.post(
            "/classify",
            content=json.dumps({"inputs": odd}),  # ensure_ascii: the lone surrogate travels as \\ud800
            headers={"content-type": "application/json"},
        )
    assert r.status_code == 200, r.text
    for reply in r.json():
        assert_label_list(reply)


async def test_bearer_key_is_required_when_configured(keyed_service_url):
    body = {"inputs": "good morning"}
    async with httpx.AsyncClient(base_url=keyed_service_url) as client:
        missing = await client.post("/classify", json=body)
        wrong = await client.post("/classify", json=body, headers={"Authorization": "Bearer nope"})
        basic = await client.post("/classify", json=body, headers={"Authorization": f"Basic {KEY}"})
        right = await client.post("/classify", json=body, headers={"Authorization": f"Bearer {KEY}"})
        health = await client.get("/healthz")
    for r in (missing, wrong, basic):
        assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer", r.text
        assert r.json()["error"]["code"] == "unauthorized"
    assert right.status_code == 200 and assert_label_list(right.json())
    assert health.status_code == 200


async def test_health_and_readiness(service_url):
    async with httpx.AsyncClient(base_url=service_url) as client:
        alive = await client.get("/healthz")
        ready = await client.get("/readyz")
    assert alive.json() == {"status": "ok", "service": "toxicity-classifier"}
    assert ready.status_code == 200 and ready.json()["status"] == "ok"
