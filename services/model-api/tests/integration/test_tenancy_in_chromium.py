"""Tenancy in real headless Chromium (docs/permissions.md): a user of another organisation signed in to the
console sees only their own project's runs, and another project's run page is the unknown run's 404."""

import pytest

from stockade import identity

from .conftest import ServedRuns

pytestmark = [pytest.mark.browser, pytest.mark.clickhouse]


async def _sign_in(page, base: str, email: str, password: str) -> None:
    await page.goto(f"{base}/runs")
    await page.get_by_label("E-mail").fill(email)
    await page.get_by_label("Password").fill(password)
    await page.get_by_label("Password").press("Enter")
    await page.wait_for_url(f"{base}/runs")


async def test_a_user_of_another_organisation_sees_only_their_projects_runs(
    served_runs: ServedRuns, browser_page, unique_name
):
    page, base = browser_page, served_runs.base_url
    bank_user = f"{unique_name('bank')}@example.org"
    async with served_runs.app.state.service.sessions() as s:
        await identity.create_user(s, bank_user, served_runs.password)
        await identity.add_project_member(s, "bank", bank_user)  # "shop" and "bulk" are someone else's
        await s.commit()
    await _sign_in(page, base, bank_user, served_runs.password)
    listed = await page.eval_on_selector_all("tr[data-run-id]", "els => els.map(e => e.dataset.runId)")
    assert listed == ["run-trust"]

    # a filter naming another project shows nothing, and its export holds nothing
    await page.goto(f"{base}/runs?project=shop")
    assert await page.locator("tr[data-run-id]").count() == 0
    exported = await page.evaluate("fetch('/runs/export.json?project=shop').then(r => r.json())")
    assert exported["events"] == []

    # another project's run page and an unknown run's page are the same 404
    foreign = await page.goto(f"{base}/run/run-masked?project=shop")
    assert foreign is not None and foreign.status == 404
    foreign_text = (await page.locator("main").inner_text()).replace("run-masked", "X")
    unknown = await page.goto(f"{base}/run/run-zzzzzz?project=shop")
    assert unknown is not None and unknown.status == 404
    assert (await page.locator("main").inner_text()).replace("run-zzzzzz", "X") == foreign_text

    # their own run opens
    own = await page.goto(f"{base}/run/run-trust?project=bank")
    assert own is not None and own.status == 200
    assert "verify_message" in await page.locator("main").inner_text()
