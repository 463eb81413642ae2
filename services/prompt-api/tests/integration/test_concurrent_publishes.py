"""Concurrent publishes never produce duplicate or skipped version numbers (real PostgreSQL, and SQLite)."""

import asyncio

from sqlalchemy import select

from stockade.prompt_api.tables import Prompt, PromptVersion

PUBLISH = "/prompts/active-prompt-version"


async def test_concurrent_publishes_from_two_replicas_get_consecutive_versions(app_factory, world, sessions):
    replicas = [await app_factory(), await app_factory()]  # two app instances on one database
    n = 24

    async def one(i):
        r = await replicas[i % 2].post(
            PUBLISH,
            headers={"X-API-Key": world.write_key},
            json={"project_id": world.direct.id, "prompt_name": "race", "content": f"content {i}"},
        )
        assert r.status_code == 201, r.text
        return r.json()

    results = await asyncio.gather(*(one(i) for i in range(n)))
    assert sorted(r["version"] for r in results) == list(range(1, n + 1))
    async with sessions() as s:
        prompt = (await s.execute(select(Prompt).where(Prompt.name == "race"))).scalar_one()
        versions = (
            await s.execute(
                select(PromptVersion.version, PromptVersion.content).where(
                    PromptVersion.prompt_id == prompt.id
                )
            )
        ).all()
    assert sorted(v for v, _ in versions) == list(range(1, n + 1))
    assert prompt.latest_version == n and prompt.active_version == n
    by_version = dict(versions)
    assert {r["version"]: r["content"] for r in results} == by_version  # each response is the row it wrote
    # the active version is the one that committed last, and reading returns it
    read = await replicas[0].get(
        PUBLISH, params={"api_key": world.read_key, "project_id": world.direct.id, "prompt_name": "race"}
    )
    assert read.json()["version"] == n and read.json()["content"] == by_version[n]


async def test_concurrent_first_publishes_of_different_prompts_and_skills(client, world):
    md = "---\nname: s{i}\ndescription: d\n---\nbody\n"

    async def prompt(i):
        return await client.post(
            PUBLISH,
            headers={"X-API-Key": world.write_key},
            json={"project_id": world.direct.id, "prompt_name": f"p{i % 3}", "content": "x"},
        )

    async def skill(i):
        return await client.post(
            "/skills/active-version",
            headers={"X-API-Key": world.write_key},
            json={"project_id": world.direct.id, "skill_name": f"s{i % 2}", "skill_md": md.format(i=i % 2)},
        )

    out = await asyncio.gather(*(prompt(i) for i in range(9)), *(skill(i) for i in range(6)))
    assert all(r.status_code == 201 for r in out), [r.text for r in out if r.status_code != 201]
    per_prompt: dict[str, list[int]] = {}
    for r in out:
        body = r.json()
        per_prompt.setdefault(body.get("prompt_name") or body["skill_name"], []).append(body["version"])
    assert {k: sorted(v) for k, v in per_prompt.items()} == {
        "p0": [1, 2, 3],
        "p1": [1, 2, 3],
        "p2": [1, 2, 3],
        "s0": [1, 2, 3],
        "s1": [1, 2, 3],
    }
