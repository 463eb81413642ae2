"""Issue 31's "done when", in real headless Chromium: a user publishes a stricter guardrail policy in the console,
a running agent built with ``GuardrailSystem.from_platform`` picks it up by push without a restart, and the run
page shows which decision each version made.

The console and prompt-api on sockets over PostgreSQL, real NATS (the push and the run-store reads), the agent's
events stored by guardrail-ingest's own ClickHouse sink (chdb) and read back by its own responder."""

import asyncio

import pytest

from stockade.client import ClientSettings, PushSettings
from stockade.contracts import PolicyRef
from stockade.guardrail_ingest.sinks.clickhouse import ClickHouseSink
from stockade.guardrails import GuardrailSystem

from .conftest import ingest_reads, store_batches

pytestmark = [pytest.mark.browser, pytest.mark.postgres, pytest.mark.nats, pytest.mark.clickhouse]

LENIENT = "guardrails:\n  checks:\n    exfiltration:\n      enabled: false\n"
STRICT = "guardrails:\n  checks:\n    exfiltration:\n      enabled: true\n      secrets:\n        detect_secrets: false\n"
LEAK = "the key is AKIAQ3EGRT7PLMZK5VXC"


async def until(condition, what: str, deadline_s: float = 15.0) -> None:
    """Every wait has a deadline: the push takes well under a second here."""
    loop = asyncio.get_running_loop()
    end = loop.time() + deadline_s
    while not condition():
        assert loop.time() < end, f"no {what} within {deadline_s} s"
        await asyncio.sleep(0.05)


async def test_a_stricter_policy_published_in_the_console_reaches_a_running_agent(
    prompt_world, browser_page, nats_url, clickhouse_dsn, unique_name, tmp_path
):
    world, page = prompt_world, browser_page
    await sign_in(page, world)
    missing = await page.goto(f"{world.base_url}/projects/{world.shop}/policies/support-bot")
    assert missing is not None and missing.status == 404  # no such policy yet
    agent = await asyncio.to_thread(start_agent, world, nats_url, tmp_path)
    try:
        assert agent.policy_ref == PolicyRef(name="support-bot", version=1)
        agent.link_arms(world.shop, agent_id="support-agent")
        agent.begin_run("run-policy")
        assert (await agent.check_output(LEAK)).action.value == "allow"  # v1 does not look for secrets

        # the user publishes the stricter version from the policy's page
        await page.goto(f"{world.base_url}/projects/{world.shop}/policies/support-bot")
        await page.get_by_label("Policy YAML").fill(STRICT)
        await page.get_by_label("Commit message").fill("catch secrets in answers")
        await page.get_by_role("button", name="Publish as a new version").click()
        await page.wait_for_url(lambda url: "done=published" in url)

        # the running agent follows it, without a restart
        await until(lambda: agent.policy_ref == PolicyRef(name="support-bot", version=2), "switch to v2")
        assert (await agent.check_output(LEAK)).action.value == "block"
        events = agent.storage.buffered("run-policy")
    finally:
        await asyncio.to_thread(agent._platform_client.close)

    # its events go to the run store; the run page says which version made each decision
    table = unique_name("guardrail_events")
    body = {
        "run": {"run_id": "run-policy", "project_id": world.shop, "agent_id": "support-agent"},
        "events": [e.model_dump(mode="json") for e in events],
    }
    await store_batches(clickhouse_dsn, table, [body])
    sink = ClickHouseSink(clickhouse_dsn, table)
    try:
        async with ingest_reads(sink, nats_url):
            await page.goto(f"{world.base_url}/run/run-policy?project={world.shop}")
            rows = page.get_by_test_id("timeline").locator("tbody tr")
            shown = await rows.evaluate_all(
                "rs => rs.map(r => r.querySelector('.outcome')?.textContent + ' ' + "
                "r.querySelector('td[data-policy]').dataset.policy)"
            )
            assert "allow support-bot v1" in shown and "block support-bot v2" in shown
            assert shown.index("allow support-bot v1") < shown.index("block support-bot v2")
            await page.screenshot(path="/tmp/model-api-run-policy.png", full_page=True)
    finally:
        await sink.aclose()


def start_agent(world, nats_url: str, tmp_path) -> GuardrailSystem:
    """The agent: policy support-bot v1 published, then the system built from the platform (blocking calls: run
    in a thread, prompt-api serves on the test's loop)."""
    from stockade.client import StockadeClient

    with StockadeClient(world.keys["reviewer"], ClientSettings(base_url=world.prompt_api)) as admin:
        admin.publish_policy(world.shop, "support-bot", LENIENT, "secrets not checked yet")
    settings = ClientSettings(base_url=world.prompt_api, push=PushSettings(nats_url=nats_url))
    return GuardrailSystem.from_platform(
        world.shop,
        "support-bot",
        api_key=world.keys["reviewer"],
        settings=settings,
        cache_dir=tmp_path / "policies",
        storage={"enabled": True, "backend_url": "http://127.0.0.1:9"},  # kept in memory: never flushed
    )


async def sign_in(page, world) -> None:
    await page.goto(f"{world.base_url}/projects")
    await page.get_by_label("E-mail").fill(world.reviewer)
    await page.get_by_label("Password").fill(world.password)
    await page.get_by_label("Password").press("Enter")
    await page.wait_for_url(f"{world.base_url}/projects")
