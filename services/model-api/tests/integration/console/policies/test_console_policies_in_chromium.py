"""The guardrail policy pages in real headless Chromium (issue 31): the console and prompt-api on sockets over one
PostgreSQL database and real NATS. The list, a policy's versions and diff, rollback, the Manual review queue
(refused without the approver tag, a reject needs a comment, approve publishes), and the 404 of a project the
user is not a member of."""

import httpx
import pytest

pytestmark = [pytest.mark.browser, pytest.mark.postgres, pytest.mark.nats]

MASKING = "guardrails:\n  checks:\n    pii:\n      default_action: mask\n"
BLOCKING = "guardrails:\n  checks:\n    pii:\n      default_action: block\n"
BLOCKING_TOXIC = BLOCKING + "    toxicity:\n      enabled: false\n"


async def sign_in(page, world, email, path="/projects"):
    await page.goto(f"{world.base_url}{path}")
    await page.get_by_label("E-mail").fill(email)
    await page.get_by_label("Password").fill(world.password)
    await page.get_by_label("Password").press("Enter")
    await page.wait_for_url(f"{world.base_url}{path}")


async def post(world, who: str, path: str, body: dict) -> dict:
    async with httpx.AsyncClient(base_url=world.prompt_api) as api:
        answer = await api.post(path, json=body, headers={"X-API-Key": world.keys[who]})
    assert answer.status_code in (200, 201), answer.text
    return answer.json()


async def active_yaml(world, project: str, name: str) -> tuple[int, str]:
    async with httpx.AsyncClient(base_url=world.prompt_api) as api:
        answer = await api.get(
            "/policies/active-version",
            params={"project_id": project, "policy_name": name},
            headers={"X-API-Key": world.keys["reviewer"]},
        )
    assert answer.status_code == 200, answer.text
    return answer.json()["version"], answer.json()["yaml"]


async def publish(world, project: str, name: str, yaml: str, message: str) -> None:
    body = {"project_id": project, "policy_name": name, "yaml": yaml, "commit_message": message}
    await post(world, "reviewer", "/policies/active-version", body)


async def versions(page) -> list[str]:
    return await page.locator("tr[data-version]").evaluate_all("rs => rs.map(r => r.dataset.version)")


async def test_list_versions_diff_and_rollback(prompt_world, browser_page):
    world, page = prompt_world, browser_page
    await publish(world, world.shop, "support-bot", MASKING, "mask PII")
    await publish(world, world.shop, "support-bot", BLOCKING, "block PII")
    await sign_in(page, world, world.reviewer, f"/projects/{world.shop}")
    await page.get_by_test_id("policies-link").click()
    await page.wait_for_url(f"{world.base_url}/projects/{world.shop}/policies")
    row = page.locator('tr[data-policy="support-bot"]')
    assert "block PII" in await row.text_content() and world.reviewer in await row.text_content()

    await row.get_by_role("link", name="support-bot").click()
    await page.wait_for_url(f"{world.base_url}/projects/{world.shop}/policies/support-bot")
    assert await versions(page) == ["2", "1"]
    diff = page.get_by_test_id("diff")
    assert any("default_action: block" in t for t in await diff.locator("tr.added").all_text_contents())
    assert any("default_action: mask" in t for t in await diff.locator("tr.removed").all_text_contents())
    await page.screenshot(path="/tmp/model-api-policy.png", full_page=True)

    page.on("dialog", lambda dialog: dialog.accept())
    await page.get_by_role("button", name="Roll back to version 1").click()
    await page.wait_for_url(lambda url: "done=rollback" in url)
    assert "Version 3 is active: the policy of version 1" in await page.get_by_role("status").text_content()
    assert await versions(page) == ["3", "2", "1"]
    assert "active" in await page.locator('tr[data-version="3"]').text_content()
    assert await active_yaml(world, world.shop, "support-bot") == (3, MASKING)  # what agents now load

    # the editor: an invalid policy is refused with its key path and the text kept; a stricter one published
    editor = page.get_by_label("Policy YAML")
    assert await editor.input_value() == MASKING  # the active version, to edit
    await editor.fill(MASKING.replace("mask", "explode"))
    await page.get_by_role("button", name="Publish as a new version").click()
    assert "guardrails.checks.pii.default_action" in await page.get_by_role("alert").text_content()
    assert "explode" in await page.get_by_label("Policy YAML").input_value()
    await page.get_by_label("Policy YAML").fill(BLOCKING_TOXIC)
    await page.get_by_label("Commit message").fill("stricter")
    await page.get_by_role("button", name="Publish as a new version").click()
    await page.wait_for_url(lambda url: "done=published" in url)
    assert "Version 4 is active" in await page.get_by_role("status").text_content()
    assert await active_yaml(world, world.shop, "support-bot") == (4, BLOCKING_TOXIC)


async def test_the_policy_review_queue_binds_as_for_prompts(prompt_world, browser_page):
    world, page = prompt_world, browser_page
    await publish(world, world.legal, "legal-bot", MASKING, "first")
    propose = "/policies/legal-bot/proposals"
    stricter = await post(
        world, "author", propose, {"project_id": world.legal, "yaml": BLOCKING, "commit_message": "stricter"}
    )

    # the author, without the approver tag: proposes from the editor, prompt-api refuses an approval
    await sign_in(page, world, world.author, f"/projects/{world.legal}/policies/legal-bot")
    await page.get_by_label("Policy YAML").fill(BLOCKING_TOXIC)
    await page.get_by_label("Commit message").fill("other")
    await page.get_by_role("button", name="Propose for review").click()
    await page.wait_for_url(f"{world.base_url}/projects/{world.legal}/policy-reviews")
    cards = page.locator("section[data-proposal-id]")
    ids = await cards.evaluate_all("s => s.map(e => e.dataset.proposalId)")
    other = {"id": next(i for i in ids if i != stricter["id"])}
    await page.goto(f"{world.base_url}/projects/{world.legal}/policies")
    assert "2 pending" in await page.get_by_test_id("policy-review-link").text_content()
    await page.get_by_test_id("policy-review-link").click()
    card = page.locator(f'section[data-proposal-id="{stricter["id"]}"]')
    assert any("default_action: block" in t for t in await card.locator("tr.added").all_text_contents())
    await card.get_by_role("button", name="Approve and publish").click()
    assert "prompt-api refused (403)" in await page.get_by_role("alert").text_content()

    # the approver: a reject without a comment is refused, with one it is done; approve publishes
    await page.context.clear_cookies()
    await sign_in(page, world, world.reviewer, f"/projects/{world.legal}/policy-reviews")
    await (
        page.locator(f'section[data-proposal-id="{other["id"]}"]')
        .get_by_role("button", name="Reject")
        .click()
    )
    assert "422" in await page.get_by_role("alert").text_content()
    await page.goto(f"{world.base_url}/projects/{world.legal}/policy-reviews")
    card = page.locator(f'section[data-proposal-id="{other["id"]}"]')
    await card.get_by_label("Comment").fill("one change at a time")
    await card.get_by_role("button", name="Reject").click()
    await page.wait_for_url(lambda url: "done=rejected" in url)
    card = page.locator(f'section[data-proposal-id="{stricter["id"]}"]')
    await card.get_by_role("button", name="Approve and publish").click()
    await page.wait_for_url(lambda url: "done=approved" in url)
    assert "legal-bot version 2 is active" in await page.get_by_role("status").text_content()
    assert await page.get_by_test_id("queue-empty").is_visible()
    decided = page.get_by_test_id("decided")
    assert "one change at a time" in await decided.text_content()
    assert await active_yaml(world, world.legal, "legal-bot") == (2, BLOCKING)


@pytest.mark.parametrize(
    ("who", "path"),
    [
        ("outsider", "/projects/{shop}/policies"),  # same organisation, not a member
        ("author", "/projects/{shop}/policies/support-bot"),
        ("author", "/projects/{shop}/policy-reviews"),
    ],
)
async def test_a_project_the_user_is_not_a_member_of_is_not_found(prompt_world, browser_page, who, path):
    world, page = prompt_world, browser_page
    await publish(world, world.shop, "support-bot", MASKING, "mask PII")
    email = {"outsider": world.outsider, "author": world.author}[who]
    await sign_in(page, world, email)
    answer = await page.goto(f"{world.base_url}{path.format(shop=world.shop)}")
    assert answer is not None and answer.status == 404
    assert "support-bot" not in await page.locator("main").text_content()
