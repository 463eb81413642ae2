"""Cursor paging of GET /prompts, prompt history, GET /skills, /skills/index.json and skill history.

Each runs on SQLite and on a real PostgreSQL database (the ``db_url`` fixture)."""

import base64

import pytest

from stockade.prompt_api import paging


async def _publish(client, key, project_id, name, content="text"):
    r = await client.post(
        "/prompts/active-prompt-version",
        headers={"X-API-Key": key},
        json={"project_id": project_id, "prompt_name": name, "content": content},
    )
    assert r.status_code == 201, r.text
    return r.json()


async def _pages(client, path, params, headers, between=None):
    """Every page of a listing, following X-Next-Cursor; ``between(n)`` runs after page n."""
    pages, cursor = [], None
    while True:
        r = await client.get(
            path, params={**params, **({"cursor": cursor} if cursor else {})}, headers=headers
        )
        assert r.status_code == 200, r.text
        pages.append(r.json())
        cursor = r.headers.get("X-Next-Cursor")
        if cursor is None:
            assert "Link" not in r.headers
            return pages
        assert r.headers["Link"].endswith('>; rel="next"') and f"cursor={cursor}" in r.headers["Link"]
        if between is not None:
            await between(len(pages))
        assert len(pages) < 100, "paging does not end"


async def test_prompts_are_paged_each_exactly_once_while_versions_are_published(client, world):
    key, project = world.write_key, world.direct.id
    names = [f"p{i:02d}" for i in range(23)]
    for name in reversed(names):
        await _publish(client, key, project, name)
    headers = {"X-API-Key": key}

    async def publish_between(n):
        # new versions of a prompt already listed and of one not yet listed, and a new prompt that sorts
        # before the pages already read (it belongs to a fresh listing, and shifts nothing)
        await _publish(client, key, project, names[0], f"again {n}")
        await _publish(client, key, project, names[-1], f"again {n}")
        await _publish(client, key, project, f"a{n}")

    pages = await _pages(client, "/prompts", {"project_id": project, "limit": "5"}, headers, publish_between)
    assert [len(p) for p in pages] == [5, 5, 5, 5, 3]
    listed = [p["prompt_name"] for page in pages for p in page]
    assert listed == names  # each once, by name
    # the last page saw the versions published while paging
    assert pages[-1][-1]["active_version"] == 5 and pages[-1][-1]["active"]["content"] == "again 4"


async def test_first_page_keeps_the_list_shape_and_the_default_page_is_bounded(client, world):
    key, project = world.write_key, world.direct.id
    headers = {"X-API-Key": key}
    await _publish(client, key, project, "only")
    r = await client.get("/prompts", params={"project_id": project}, headers=headers)
    assert r.status_code == 200 and isinstance(r.json(), list) and len(r.json()) == 1
    assert "X-Next-Cursor" not in r.headers

    for i in range(paging.DEFAULT_LIMIT):
        await _publish(client, key, project, f"n{i:03d}")
    first = await client.get("/prompts", params={"project_id": project}, headers=headers)
    assert len(first.json()) == paging.DEFAULT_LIMIT and "X-Next-Cursor" in first.headers
    rest = await client.get(
        "/prompts", params={"project_id": project, "cursor": first.headers["X-Next-Cursor"]}, headers=headers
    )
    assert [p["prompt_name"] for p in rest.json()] == ["only"] and "X-Next-Cursor" not in rest.headers


async def test_link_header_is_a_working_next_url_without_the_key(client, world):
    key, project = world.read_key, world.direct.id
    for name in ("a", "b", "c"):
        await _publish(client, world.write_key, project, name)
    r = await client.get("/prompts", params={"project_id": project, "limit": "2", "api_key": key})
    link = r.headers["Link"]
    assert key not in link
    url = link[1 : link.index(">")]
    nxt = await client.get(url, headers={"X-API-Key": key})
    assert [p["prompt_name"] for p in nxt.json()] == ["c"]


async def test_history_pages_newest_first_each_version_once_while_new_ones_arrive(client, world):
    key, project = world.write_key, world.direct.id
    for i in range(12):
        await _publish(client, key, project, "greeting", f"v{i + 1}")
    headers = {"X-API-Key": key}

    async def publish_between(n):
        await _publish(client, key, project, "greeting", f"new {n}")

    pages = await _pages(
        client, "/prompts/greeting/versions", {"project_id": project, "limit": "5"}, headers, publish_between
    )
    versions = [v["version"] for page in pages for v in page]
    assert versions == list(range(12, 0, -1))
    assert pages[0][0]["content"] == "v12" and pages[-1][-1]["content"] == "v1"
    # the versions published meanwhile are on a fresh first page
    again = await client.get("/prompts/greeting/versions", params={"project_id": project}, headers=headers)
    assert [v["version"] for v in again.json()][:3] == [14, 13, 12]


@pytest.mark.parametrize(
    "path",
    ["/prompts", "/prompts/greeting/versions", "/skills", "/skills/index.json", "/skills/incident-response"],
)
@pytest.mark.parametrize(
    "params, field",
    [
        ({"limit": "0"}, "limit"),
        ({"limit": "-3"}, "limit"),
        ({"limit": "100000"}, "limit"),
        ({"limit": "ten"}, "limit"),
        ({"limit": "1e3"}, "limit"),
        ({"cursor": "not a cursor"}, "cursor"),
        ({"cursor": base64.urlsafe_b64encode(b'["elsewhere","x"]').decode()}, "cursor"),
        ({"cursor": base64.urlsafe_b64encode(b'{"a":1}').decode()}, "cursor"),
        ({"cursor": base64.urlsafe_b64encode(b"\xff\xfe").decode()}, "cursor"),
        ({"cursor": "x" * 600}, "cursor"),
        ({"cursor": paging.encode("prompts", 7)}, "cursor"),
        ({"cursor": paging.encode("prompt-versions", "7")}, "cursor"),
        ({"cursor": paging.encode("prompts", "a\x00b")}, "cursor"),
    ],
)
async def test_bad_limit_or_cursor_is_a_422_naming_it(client, world, sample_skill, path, params, field):
    await _publish(client, world.write_key, world.direct.id, "greeting")
    body, _, _ = sample_skill
    r = await client.post(
        "/skills/active-version", headers={"X-API-Key": world.write_key}, json=body(world.direct.id)
    )
    assert r.status_code == 201, r.text
    r = await client.get(
        path, params={"project_id": world.direct.id, **params}, headers={"X-API-Key": world.read_key}
    )
    assert r.status_code == 422, r.text
    assert r.json()["error"]["code"] == "invalid_request"
    assert field in r.json()["error"]["message"]


async def test_key_problems_come_before_a_bad_limit(client, world):
    r = await client.get(
        "/prompts", params={"project_id": world.direct.id, "limit": "0"}, headers={"X-API-Key": "nope"}
    )
    assert r.status_code == 401


async def test_skills_and_skill_history_are_paged(client, world, sample_skill):
    body, md, _ = sample_skill
    headers = {"X-API-Key": world.write_key}
    project = world.direct.id
    names = ["alpha", "bravo", "charlie", "delta", "echo"]
    for name in names:
        skill_md = md.replace("name: incident-response", f"name: {name}")
        r = await client.post(
            "/skills/active-version", headers=headers, json=body(project, skill_md, name, {})
        )
        assert r.status_code == 201, r.text
    for i in range(4):
        skill_md = md.replace("name: incident-response", "name: alpha") + f"\nrevision {i}\n"
        r = await client.post(
            "/skills/active-version", headers=headers, json=body(project, skill_md, "alpha", {})
        )
        assert r.status_code == 201, r.text

    pages = await _pages(client, "/skills", {"project_id": project, "limit": "2"}, headers)
    assert [s["skill_name"] for page in pages for s in page] == names and len(pages) == 3

    pages = await _pages(client, "/skills/index.json", {"project_id": project, "limit": "3"}, headers)
    assert [n for page in pages for n in page["skills"]] == names

    pages = await _pages(client, "/skills/alpha", {"project_id": project, "limit": "2"}, headers)
    assert [v["version"] for page in pages for v in page["history"]] == [5, 4, 3, 2, 1]
    assert all(page["version"] == 5 and page["active_version"] == 5 for page in pages)
