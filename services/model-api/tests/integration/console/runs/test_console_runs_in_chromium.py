"""The run pages in real headless Chromium against model-api on a socket, reading runs stored in ClickHouse by
guardrail-ingest's sink: every filter, paging, the run timeline, the overview, export, labels and the keyboard."""

import asyncio
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.clickhouse]

SHOTS = {
    "runs": "/tmp/model-api-runs.png",
    "run": "/tmp/model-api-run.png",
    "overview": "/tmp/model-api-overview.png",
}


async def rows(page):
    return await page.eval_on_selector_all("tr[data-run-id]", "els => els.map(e => e.dataset.runId)")


def query(page):
    return {k: v[0] for k, v in parse_qs(urlsplit(page.url).query).items()}


async def sign_in(page, served_runs, path):
    await page.goto(f"{served_runs.base_url}{path}")
    await page.get_by_label("E-mail").fill(served_runs.email)
    await page.get_by_label("Password").fill(served_runs.password)
    await page.get_by_label("Password").press("Enter")
    await page.wait_for_url(f"{served_runs.base_url}{path}")


async def test_runs_list_every_filter_paging_and_labels(served_runs, browser_page):
    page, base = browser_page, served_runs.base_url
    refused = []
    page.on("console", lambda m: refused.append(m.text) if "Content Security Policy" in m.text else None)
    await sign_in(page, served_runs, "/runs")
    assert (await rows(page))[:3] == ["run-trust", "run-clean", "run-masked"]
    assert await page.locator("nav >> text=Runs").get_attribute("aria-current") == "page"

    # every control of the filter form has a label a screen reader announces
    unlabelled = await page.eval_on_selector_all(
        "#run-filters input, #run-filters select",
        "els => els.filter(e => e.labels.length === 0).map(e => e.name)",
    )
    assert unlabelled == []
    await page.screenshot(path=SHOTS["runs"], full_page=True)

    async def apply(**fields):
        await page.goto(f"{base}/runs")
        for label, value in fields.items():
            control = page.get_by_label(label, exact=True)
            if await control.evaluate("e => e.tagName") == "SELECT":
                await control.select_option(value)
            else:
                await control.fill(value)
        await page.get_by_role("button", name="Apply").click()
        await page.wait_for_load_state()
        return await rows(page)

    assert await apply(Project="bank") == ["run-trust"]
    assert query(page)["project"] == "bank"
    assert await page.get_by_label("Project", exact=True).input_value() == "bank"  # the form keeps it
    assert await apply(Agent="support-bot") == ["run-clean", "run-masked"]
    assert await apply(Outcome="block") == ["run-trust", "run-masked"]
    assert await apply(Check="exfiltration") == ["run-masked"]
    assert await apply(Action="mask", Project="shop") == ["run-masked"]
    # run-old is 30 days back from when the conftest was imported: a day either side of it (a calendar day from
    # now missed it when the suite crossed midnight, or when it lay in the day's last minute)
    old = datetime.now(UTC) - timedelta(days=30)
    since, until = ((old + timedelta(hours=h)).strftime("%Y-%m-%dT%H:%M") for h in (-24, 24))
    assert await apply(**{"From (UTC)": since, "To (UTC)": until}) == ["run-old"]
    assert await apply(Project="nobody") == []
    assert await page.get_by_test_id("no-runs").is_visible()

    # paging: three pages of 25, 25 and 10, no run twice; then back to the first
    await page.goto(f"{base}/runs")
    seen = await rows(page)
    for _ in range(2):
        await page.get_by_test_id("next-page").click()
        await page.wait_for_load_state()
        seen += await rows(page)
    assert len(seen) == len(set(seen)) == 60 and await page.get_by_test_id("next-page").count() == 0
    await page.get_by_test_id("first-page").click()
    await page.wait_for_load_state()
    assert (await rows(page))[0] == "run-trust"

    # a bad filter is shown next to the form, not as an error page
    answer = await page.goto(f"{base}/runs?outcome=explode&project=shop")
    assert answer.status == 422
    assert "outcome: must be one of" in await page.get_by_role("alert").text_content()
    assert await page.get_by_label("Project", exact=True).input_value() == "shop"
    assert refused == []


async def test_keyboard_only_from_filters_to_a_run_and_its_timeline(served_runs, browser_page):
    page, base = browser_page, served_runs.base_url
    await sign_in(page, served_runs, "/runs")
    # type a filter and submit with Enter, without the mouse
    await page.get_by_label("Project", exact=True).focus()
    await page.keyboard.type("shop")
    await page.keyboard.press("Enter")
    await page.wait_for_url(lambda url: "project=shop" in url)
    assert await rows(page) == ["run-clean", "run-masked"]
    # Tab until the link of run-masked has the focus, then open it with Enter
    for _ in range(60):
        await page.keyboard.press("Tab")
        focused = await page.evaluate("document.activeElement.textContent")
        if focused.strip() == "run-masked":
            break
    else:
        pytest.fail("the run link is not reachable with Tab")
    await page.keyboard.press("Enter")
    await page.wait_for_url(f"{base}/run/run-masked?project=shop")
    timeline = page.get_by_test_id("timeline")
    kinds = await timeline.locator("tbody tr").evaluate_all(
        "rs => rs.map(r => r.dataset.kind + ':' + r.dataset.name)"
    )
    assert kinds == [
        "check:pii",
        "pii_audit:pii",
        "check:toxicity",
        "generate:generate",
        "check:exfiltration",
    ]
    exfil = await timeline.locator('tr[data-name="exfiltration"]').text_content()
    assert "block" in exfil and "3.2" in exfil and "SECRET × 1" in exfil
    # the platform policy version behind each decision, linked to that version's diff on the policy page
    policies = page.get_by_test_id("run-policies").locator(".tag")
    assert await policies.all_text_contents() == ["support v1", "support v2"]
    block_policy = timeline.locator('tr[data-name="exfiltration"]').get_by_role("link", name="support v2")
    assert await block_policy.get_attribute("href") == "/projects/shop/policies/support?from=1&to=2"
    focus_ring = await page.evaluate(
        "(() => { const a = document.querySelector('main a'); a.focus(); return getComputedStyle(a).outlineStyle; })()"
    )
    assert focus_ring == "solid"
    await page.screenshot(path=SHOTS["run"], full_page=True)


async def test_overview_charts_and_export_downloads(served_runs, browser_page):
    page, base = browser_page, served_runs.base_url
    refused = []
    page.on("console", lambda m: refused.append(m.text) if "Content Security Policy" in m.text else None)
    await sign_in(page, served_runs, "/runs/overview")
    charts = page.locator("svg.chart")
    assert await charts.count() == 5
    assert await page.get_by_role("img", name="pii: blocks and masks per bucket").count() == 1
    bars = await page.locator('figure[data-check="pii"] rect.mask').count()
    assert bars >= 1
    box = await page.get_by_role("img", name="Top finding types").bounding_box()
    assert box is not None and box["width"] > 200  # rendered, styles applied under the CSP
    assert "below the floor trusted" in await page.get_by_test_id("trust").text_content()
    await page.get_by_label("Project", exact=True).fill("bank")
    await page.get_by_role("button", name="Apply").click()
    await page.wait_for_load_state()
    assert "No check blocked or masked in this range." in await page.text_content("main")
    await page.goto(f"{base}/runs/overview")
    await page.screenshot(path=SHOTS["overview"], full_page=True)

    await page.goto(f"{base}/runs?project=shop")
    async with page.expect_download() as csv_download:
        await page.get_by_role("link", name="CSV").click()
    text = await asyncio.to_thread(Path(await (await csv_download.value).path()).read_text, encoding="utf-8")
    assert text.splitlines()[0].startswith("occurred_at,event_id,run_id") and len(text.splitlines()) == 8
    async with page.expect_download() as json_download:
        await page.get_by_role("link", name="JSON").click()
    body = json.loads(
        await asyncio.to_thread(Path(await (await json_download.value).path()).read_text, encoding="utf-8")
    )
    assert {e["run_id"] for e in body["events"]} == {"run-masked", "run-clean"}
    assert refused == []
