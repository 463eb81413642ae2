"""The prompt and skill pages in real headless Chromium: the console and prompt-api on sockets over one
PostgreSQL database and real NATS. Signing in (no key to paste), each page, the diff, rollback, the Manual review flow end
to end for prompts and a skill (refused without the approver tag, then reject and approve with comments), labels
and the keyboard."""

import httpx
import pytest

pytestmark = [pytest.mark.browser, pytest.mark.postgres, pytest.mark.nats]

SHOTS = {
    "projects": "/tmp/model-api-projects.png",
    "project": "/tmp/model-api-project.png",
    "prompt": "/tmp/model-api-prompt.png",
    "skill": "/tmp/model-api-skill.png",
    "reviews": "/tmp/model-api-reviews.png",
}


def watch_csp(page) -> list[str]:
    refused: list[str] = []
    page.on("console", lambda m: refused.append(m.text) if "Content Security Policy" in m.text else None)
    return refused


async def sign_in(page, world, email):
    await page.goto(f"{world.base_url}/projects")
    await page.get_by_label("E-mail").fill(email)
    await page.get_by_label("Password").fill(world.password)
    await page.get_by_label("Password").press("Enter")
    await page.wait_for_url(f"{world.base_url}/projects")


async def unlabelled(page) -> list[str]:
    return await page.eval_on_selector_all(
        "main input:not([type=hidden]), main select, main textarea",
        "els => els.filter(e => e.labels.length === 0).map(e => e.name)",
    )


async def active_version(world, project, name) -> dict:
    async with httpx.AsyncClient(base_url=world.prompt_api) as api:
        answer = await api.get(
            "/prompts/active-prompt-version",
            params={"api_key": world.keys["reviewer"], "project_id": project, "prompt_name": name},
        )
    assert answer.status_code == 200
    return answer.json()


async def skill_file(world, project, path) -> str:
    async with httpx.AsyncClient(base_url=world.prompt_api) as api:
        answer = await api.get(
            f"/skills/refund-policy/{path}",
            params={"project_id": project},
            headers={"X-API-Key": world.keys["reviewer"]},
        )
    assert answer.status_code == 200
    return answer.text


async def test_pages_diff_and_rollback(prompt_world, browser_page):
    page, base = browser_page, prompt_world.base_url
    refused = watch_csp(page)
    await sign_in(page, prompt_world, prompt_world.reviewer)
    assert await page.get_by_label("API key").count() == 0  # nothing to paste
    assert await page.locator("nav >> text=Prompts and skills").get_attribute("aria-current") == "page"
    rows = page.get_by_test_id("projects").locator("tbody tr")
    assert await rows.evaluate_all(
        "rs => rs.map(r => r.cells[0].textContent + '|' + r.cells[3].textContent)"
    ) == [
        "legal|approver",
        "shop|member",
    ]
    await page.screenshot(path=SHOTS["projects"], full_page=True)

    await page.get_by_role("link", name="shop").click()
    await page.wait_for_url(f"{base}/projects/{prompt_world.shop}")
    greeting = page.locator('tr[data-prompt="greeting"]')
    assert "warmer greeting" in await greeting.text_content()
    assert prompt_world.reviewer in await greeting.text_content()  # published by, as an e-mail
    assert (
        "How to handle refunds (v2)." in await page.locator('tr[data-skill="refund-policy"]').text_content()
    )
    await page.screenshot(path=SHOTS["project"], full_page=True)

    # history and the diff of the two newest versions, escaped (the <b> is text, not markup)
    await greeting.get_by_role("link", name="greeting").click()
    await page.wait_for_url(f"{base}/projects/{prompt_world.shop}/prompts/greeting")
    assert await page.locator("tr[data-version]").evaluate_all("rs => rs.map(r => r.dataset.version)") == [
        "2",
        "1",
    ]
    diff = page.get_by_test_id("diff")
    assert await diff.locator("b").count() == 0
    added = await diff.locator("tr.added").all_text_contents()
    removed = await diff.locator("tr.removed").all_text_contents()
    assert any("Hello <b>friend</b>!" in line for line in added)
    assert any('"temperature": 0.2' in line for line in added)
    assert any("How can I help?" in line for line in removed)
    assert await unlabelled(page) == []
    await page.screenshot(path=SHOTS["prompt"], full_page=True)

    # the same version on both sides: no difference
    await page.get_by_label("From version").select_option("2")
    await page.get_by_role("button", name="Show diff").click()
    await page.wait_for_url(lambda url: "from=2" in url and "to=2" in url)
    assert await page.get_by_test_id("no-diff").is_visible()

    # rollback: confirmed in a dialog, published by prompt-api as version 3 with version 1's content
    page.on("dialog", lambda dialog: dialog.accept())
    await page.get_by_role("button", name="Roll back to version 1").click()
    await page.wait_for_url(lambda url: "done=rollback" in url)
    assert await page.get_by_role("status").text_content() == "Version 3 is active: the content of version 1."
    assert await page.locator("tr[data-version]").evaluate_all("rs => rs.map(r => r.dataset.version)") == [
        "3",
        "2",
        "1",
    ]
    assert "active" in await page.locator('tr[data-version="3"]').text_content()
    assert (await active_version(prompt_world, prompt_world.shop, "greeting"))[
        "content"
    ] == "Hello!\nHow can I help?"

    # the skill page: history and the SKILL.md diff
    await page.goto(f"{base}/projects/{prompt_world.shop}/skills/refund-policy")
    assert await page.locator("tr[data-version]").count() == 2
    skill_diff = page.get_by_test_id("diff")
    assert any("60 days" in t for t in await skill_diff.locator("tr.added").all_text_contents())
    assert any("30 days" in t for t in await skill_diff.locator("tr.removed").all_text_contents())
    assert await unlabelled(page) == []
    await page.screenshot(path=SHOTS["skill"], full_page=True)
    assert refused == []


async def test_review_flow_end_to_end(prompt_world, browser_page, chromium_browser):
    page, base = browser_page, prompt_world.base_url
    refused = watch_csp(page)
    queue_url = f"{base}/projects/{prompt_world.legal}/reviews"

    # the author (a member without the approver tag) sees the queue, but prompt-api refuses the approval
    await sign_in(page, prompt_world, prompt_world.author)
    await page.goto(queue_url)
    proposals = page.locator("section.proposal")
    assert await proposals.count() == 3  # two prompt versions and a skill version
    first = proposals.nth(0)
    assert "shorter answers" in await first.get_by_role("heading").text_content()
    await first.get_by_role("button", name="Approve and publish").click()
    await page.wait_for_load_state()
    alert = await page.get_by_role("alert").text_content()
    assert "prompt-api refused (403)" in alert and "approver tag" in alert
    assert (await active_version(prompt_world, prompt_world.legal, "terms"))["version"] == 1
    await page.goto(queue_url)
    await (
        page.locator('section.proposal[data-kind="skill"]')
        .get_by_role("button", name="Approve and publish")
        .click()
    )
    await page.wait_for_load_state()
    assert "prompt-api refused (403)" in await page.get_by_role("alert").text_content()
    assert (await skill_file(prompt_world, prompt_world.legal, "SKILL.md")).count("14 days") == 1

    # the reviewer, in a browser of their own, rejects one with a comment and approves the other
    context = await chromium_browser.new_context()
    try:
        reviewer = await context.new_page()
        refused += watch_csp(reviewer)
        await sign_in(reviewer, prompt_world, prompt_world.reviewer)
        await reviewer.goto(f"{base}/projects/{prompt_world.legal}")
        await reviewer.get_by_test_id("review-link").click()
        await reviewer.wait_for_url(queue_url)
        assert await unlabelled(reviewer) == []
        loud = reviewer.locator("section.proposal", has_text="louder")
        added = await loud.get_by_test_id("diff").locator("tr.added").all_text_contents()
        assert any("Terms: shout." in t for t in added)
        await reviewer.screenshot(path=SHOTS["reviews"], full_page=True)

        # a rejection without a comment is refused by prompt-api and changes nothing
        await loud.get_by_role("button", name="Reject").click()
        await reviewer.wait_for_load_state()
        assert "a rejection needs a comment" in await reviewer.get_by_role("alert").text_content()
        await reviewer.goto(queue_url)
        loud = reviewer.locator("section.proposal", has_text="louder")
        # keyboard only: type the comment, Tab past "Approve and publish" to "Reject", Enter
        await loud.get_by_label("Comment").focus()
        await reviewer.keyboard.type("We never shout at customers.")
        await reviewer.keyboard.press("Tab")
        assert await reviewer.evaluate("document.activeElement.textContent") == "Approve and publish"
        await reviewer.keyboard.press("Tab")
        assert await reviewer.evaluate("document.activeElement.textContent") == "Reject"
        await reviewer.keyboard.press("Enter")
        await reviewer.wait_for_url(lambda url: "done=rejected" in url)
        assert await reviewer.get_by_role("status").text_content() == "Rejected the proposal for terms."
        assert await reviewer.locator("section.proposal").count() == 2

        short = reviewer.locator("section.proposal", has_text="shorter answers")
        await short.get_by_label("Comment").fill("Good, ship it.")
        await short.get_by_role("button", name="Approve and publish").click()
        await reviewer.wait_for_url(lambda url: "done=approved" in url)
        assert await reviewer.get_by_role("status").text_content() == "Approved: terms version 2 is active."

        # the skill version: its SKILL.md diff and its files against the active version, then approve
        skill = reviewer.locator('section.proposal[data-kind="skill"]')
        assert "refund-policy: longer refunds" in await skill.get_by_role("heading").text_content()
        skill_diff = skill.get_by_test_id("diff")
        assert any("30 days" in t for t in await skill_diff.locator("tr.added").all_text_contents())
        assert any("14 days" in t for t in await skill_diff.locator("tr.removed").all_text_contents())
        files = skill.get_by_test_id("proposal-files").locator("tbody tr")
        changes = {
            (await row.locator("td").nth(0).text_content()): await row.get_attribute("data-change")
            for row in await files.all()
        }
        assert changes == {"notes.txt": "new", "old.txt": "removed", "references/policy.md": "changed"}
        await skill.get_by_label("Comment").fill("Thirty days is the policy.")
        await skill.get_by_role("button", name="Approve and publish").click()
        await reviewer.wait_for_url(lambda url: "done=approved" in url)
        status = await reviewer.get_by_role("status").text_content()
        assert status == "Approved: refund-policy version 2 is active."
        assert await reviewer.get_by_test_id("queue-empty").is_visible()
        decided = reviewer.get_by_test_id("decided").locator("tbody tr")
        texts = await decided.all_text_contents()
        assert any("approved" in t and "as version 2" in t and "Good, ship it." in t for t in texts)
        assert any("rejected" in t and "We never shout at customers." in t for t in texts)
        skill_row = await reviewer.get_by_test_id("decided").locator('tr[data-kind="skill"]').text_content()
        assert "approved" in skill_row and "as version 2" in skill_row and "Thirty days" in skill_row
    finally:
        await context.close()
    published = await active_version(prompt_world, prompt_world.legal, "terms")
    assert published["version"] == 2 and published["content"] == "Terms: be polite and brief."
    assert published["commit_message"] == "shorter answers"
    md = await skill_file(prompt_world, prompt_world.legal, "SKILL.md")
    assert "Refund in 30 days." in md and "14 days" not in md
    assert await skill_file(prompt_world, prompt_world.legal, "notes.txt") == "new\n"
    assert refused == []


async def test_keyboard_only_to_a_prompt_diff_and_a_rollback(prompt_world, browser_page):
    page, base = browser_page, prompt_world.base_url
    await page.goto(f"{base}/projects")
    await page.get_by_label("E-mail").focus()
    await page.keyboard.type(prompt_world.reviewer)
    await page.keyboard.press("Tab")
    await page.keyboard.type(prompt_world.password)
    await page.keyboard.press("Enter")
    await page.wait_for_url(f"{base}/projects")

    async def tab_to(text: str, limit: int = 40) -> None:
        for _ in range(limit):
            await page.keyboard.press("Tab")
            focused = await page.evaluate("document.activeElement.textContent.trim()")
            if focused == text:
                return
        pytest.fail(f"{text!r} is not reachable with Tab")

    await tab_to("shop")
    await page.keyboard.press("Enter")
    await page.wait_for_url(f"{base}/projects/{prompt_world.shop}")
    await tab_to("greeting")
    await page.keyboard.press("Enter")
    await page.wait_for_url(f"{base}/projects/{prompt_world.shop}/prompts/greeting")
    # the newest two versions are compared by default
    assert await page.get_by_test_id("diff").locator("tr.added").count() >= 2
    # change "To version" with the arrow keys and submit the diff form with Enter on its button
    await tab_to("Show diff", 60)
    await page.keyboard.press("Shift+Tab")
    assert await page.evaluate("document.activeElement.name") == "to"
    await page.keyboard.press("ArrowDown")  # options newest first: 2 -> 1
    await page.keyboard.press("Tab")
    await page.keyboard.press("Enter")
    await page.wait_for_url(lambda url: "from=1" in url and "to=1" in url)
    assert await page.get_by_test_id("no-diff").is_visible()
    focus_ring = await page.evaluate(
        "(() => { const b = document.querySelector('main button'); b.focus(); return getComputedStyle(b).outlineStyle; })()"
    )
    assert focus_ring == "solid"
