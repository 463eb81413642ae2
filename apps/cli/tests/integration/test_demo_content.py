"""The demo content of ``stockade up`` against a real prompt-api (its app over ASGI, a migrated SQLite database
seeded like ``stockade up`` seeds it), and the demo runs against guardrail-ingest's wire model."""

import asyncio
from collections import Counter

import httpx
import pytest

from stockade.cli.demo import prepare_database
from stockade.cli.demo_content import (
    BLOCK_PII,
    MASK_PII,
    POLICY,
    PROMPT,
    SKILL,
    guardrail_runs,
    seed_policies,
    seed_prompts,
)
from stockade.cli.stack import StackConfig, http_service_env
from stockade.guardrails.storage.wire import GuardrailBatch
from stockade.prompt_api.main import create_app
from stockade.prompt_api.settings import OutboxSettings, PromptApiSettings
from stockade.runtime.settings import DatabaseSettings, NatsSettings


@pytest.fixture
async def prompt_api(tmp_path):
    cfg = StackConfig(state_dir=tmp_path)
    demo = await asyncio.to_thread(prepare_database, cfg.state_dir, cfg.db_url)  # it runs its own loop
    assert demo is not None and demo.review_project_id
    app = create_app(
        PromptApiSettings(
            db=DatabaseSettings(url=cfg.db_url),
            nats=NatsSettings(url="nats://127.0.0.1:1", connect_timeout_s=0.5),
            outbox=OutboxSettings(enabled=False),
            migrate_on_startup=False,
            gc_freeze=False,
        ),
    )
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://prompt-api") as client:
            yield client, demo


async def test_demo_prompt_has_two_versions_a_skill_and_a_proposal_to_review(prompt_api):
    client, demo = prompt_api
    await seed_prompts(client, demo.api_key, demo.project_id, demo.review_project_id)
    key = {"X-API-Key": demo.api_key}
    versions = (
        await client.get(f"/prompts/{PROMPT}/versions", params={"project_id": demo.project_id}, headers=key)
    ).json()
    assert [v["version"] for v in versions] == [2, 1] and versions[0]["config"] == {"temperature": 0.3}
    skills = (await client.get("/skills", params={"project_id": demo.project_id}, headers=key)).json()
    assert [s["skill_name"] for s in skills] == [SKILL]
    queue = (
        await client.get("/prompt-reviews", params={"project_id": demo.review_project_id}, headers=key)
    ).json()
    assert [(p["prompt_name"], p["status"], p["base_version"]) for p in queue] == [(PROMPT, "pending", 1)]


async def test_demo_policy_has_two_versions_and_one_to_review(prompt_api):
    client, demo = prompt_api
    await seed_policies(client, demo.api_key, demo.project_id, demo.review_project_id)
    key = {"X-API-Key": demo.api_key}
    versions = (
        await client.get(f"/policies/{POLICY}/versions", params={"project_id": demo.project_id}, headers=key)
    ).json()
    assert [(v["version"], v["yaml"]) for v in versions] == [(2, MASK_PII), (1, BLOCK_PII)]
    queue = (
        await client.get("/policy-reviews", params={"project_id": demo.review_project_id}, headers=key)
    ).json()
    assert [(p["policy_name"], p["status"], p["base_version"], p["yaml"]) for p in queue] == [
        (POLICY, "pending", 1, MASK_PII)
    ]
    # the demo runs name the version behind each check: the active one
    checks = [e for b in guardrail_runs(demo.project_id) for e in b["events"] if e["kind"] == "check"]
    assert {(e["policy_name"], e["policy_version"]) for e in checks} == {(POLICY, "2")}


def test_demo_runs_hold_masks_blocks_and_a_trust_rejection():
    batches = [GuardrailBatch.model_validate(b) for b in guardrail_runs("p1")]
    actions = Counter((e.kind, e.action) for b in batches for e in b.events)
    assert actions[("check", "mask")] >= 1 and actions[("check", "block")] >= 1
    assert actions[("trust", "block")] == 1
    assert {b.run.project_id for b in batches} == {"p1"}
    ids = [e.event_id for b in batches for e in b.events]
    assert len(ids) == len(set(ids))  # each event stored once


def test_the_console_is_told_where_prompt_api_is(tmp_path, monkeypatch):
    monkeypatch.delenv("MODEL_API_PROMPT_API__URL", raising=False)
    env = http_service_env(StackConfig(state_dir=tmp_path, prompt_port=18101), "model-api")
    assert env["MODEL_API_PROMPT_API__URL"] == "http://127.0.0.1:18101"
