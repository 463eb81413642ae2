"""``stockade demo-agent`` against a real prompt-api (on a socket, the SQLite database ``stockade up`` seeds) and
real NATS: it runs on the demo policy's active version, and a stricter version published meanwhile changes its
next decision by push, without a restart; each line names the version that decided."""

import asyncio
from urllib.parse import urlsplit

import httpx
import pytest

from stockade.cli.demo import prepare_database
from stockade.cli.demo_agent import build_agent, run_agent
from stockade.cli.demo_content import BLOCK_PII, MASK_PII, POLICY
from stockade.cli.stack import StackConfig
from stockade.contracts import PolicyRef
from stockade.prompt_api.main import create_app
from stockade.prompt_api.settings import OutboxSettings, PromptApiSettings
from stockade.runtime.settings import DatabaseSettings, NatsSettings
from stockade.testing.asgi import serving

pytestmark = [pytest.mark.nats]


async def test_the_demo_agent_follows_a_stricter_policy_without_a_restart(tmp_path, nats_url):
    cfg = StackConfig(state_dir=tmp_path)
    demo = await asyncio.to_thread(prepare_database, cfg.state_dir, cfg.db_url)
    assert demo is not None
    app = create_app(
        PromptApiSettings(
            db=DatabaseSettings(url=cfg.db_url),
            nats=NatsSettings(url=nats_url, connect_timeout_s=1),
            outbox=OutboxSettings(enabled=True, interval_s=0.1),  # the activation event, by push
            migrate_on_startup=False,
            gc_freeze=False,
        )
    )
    async with serving(app) as url, httpx.AsyncClient(base_url=url) as api:

        async def publish(text: str) -> None:
            body = {"project_id": demo.project_id, "policy_name": POLICY, "yaml": text}
            answer = await api.post(
                "/policies/active-version", json=body, headers={"X-API-Key": demo.api_key}
            )
            assert answer.status_code == 201, answer.text

        await publish(MASK_PII)
        ports = {"nats": urlsplit(nats_url).port, "prompt": urlsplit(url).port, "ingest": 9}
        agent = await asyncio.to_thread(build_agent, tmp_path, "127.0.0.1", ports, store=False)
        try:
            first = await run_agent(agent, 1, 0.1, say=lambda _: None)
            assert first[0].endswith("mask by support-bot v1 (events disabled)")
            await publish(BLOCK_PII)
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 15
            while agent.policy_ref != PolicyRef(name=POLICY, version=2):
                assert loop.time() < deadline, "the agent did not pick up version 2 within 15 s"
                await asyncio.sleep(0.05)
            second = await run_agent(agent, 1, 0.1, say=lambda _: None)
            assert second[0].endswith("block by support-bot v2 (events disabled)")
        finally:
            await asyncio.to_thread(agent._platform_client.close)
