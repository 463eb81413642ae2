"""Text PostgreSQL cannot hold (a NUL; a lone surrogate in a JSON body) is refused at the edge, never a 500.

The read endpoint answers it with its uniform 404, and it never reaches the statement that other requests share
(a NUL there failed every read batched with it). Other endpoints check the key first (401), then say which
parameter is wrong (422), or 400 for skill names and paths as before.
"""

import asyncio
import json

import httpx
import pytest
from sqlalchemy import func, select

from stockade.prompt_api.settings import ReadPathSettings
from stockade.prompt_api.tables import OutboxEvent, PromptVersion, SkillVersion

PATH = "/prompts/active-prompt-version"
UNIFORM_404 = b'{"error":{"code":"not_found","message":"not found"}}'
NUL = "\x00"
SKILL_MD = "---\nname: abc\ndescription: d\n---\nbody"


def _raw_client(client: httpx.AsyncClient) -> httpx.AsyncClient:
    """The same app, answering a 500 as a response (the fixture's client raises the app's exception)."""
    transport = httpx.ASGITransport(app=client.app, raise_app_exceptions=False)
    return httpx.AsyncClient(transport=transport, base_url="http://prompt-api")


async def _publish(client, key, project_id, name="p", content="c"):
    r = await client.post(
        PATH,
        headers={"X-API-Key": key},
        json={"project_id": project_id, "prompt_name": name, "content": content},
    )
    assert r.status_code == 201, r.text


@pytest.mark.parametrize("db_url", ["postgres"], indirect=True)
async def test_a_nul_read_does_not_fail_the_reads_batched_with_it(app_factory, world):
    client = await app_factory(read_path=ReadPathSettings(statements_in_flight=1))
    await _publish(client, world.write_key, world.direct.id)
    good = {"api_key": world.read_key, "project_id": world.direct.id, "prompt_name": "p"}
    bad = [{**good, "project_id": world.direct.id + NUL}, {**good, "prompt_name": "p" + NUL}]
    async with _raw_client(client) as raw:
        cases = [good, *bad] * 8
        answers = await asyncio.gather(*(raw.get(PATH, params=p) for p in cases))
    for params, r in zip(cases, answers, strict=True):
        if params is good:
            assert r.status_code == 200 and r.json()["content"] == "c", r.text
        else:
            assert r.status_code == 404 and r.content == UNIFORM_404, r.text


async def test_unstorable_read_parameters_get_the_uniform_404(client, world):
    await _publish(client, world.write_key, world.direct.id)
    good = {"api_key": world.write_key, "project_id": world.direct.id, "prompt_name": "p"}
    async with _raw_client(client) as raw:
        for name in good:
            r = await raw.get(PATH, params={**good, name: good[name] + NUL})
            assert (r.status_code, r.content) == (404, UNIFORM_404), name
            r = await raw.get(PATH, params={**good, name: NUL + good[name]})
            assert (r.status_code, r.content) == (404, UNIFORM_404), name
        assert (await raw.get(PATH, params=good)).status_code == 200


GETS = [
    ("/prompts", {"project_id": "{project}\x00"}, 422),
    ("/prompts/p/versions", {"project_id": "{project}\x00"}, 422),
    ("/prompts/p%00/versions", {"project_id": "{project}"}, 422),
    ("/skills", {"project_id": "{project}\x00"}, 422),
    ("/skills/index.json", {"project_id": "{project}\x00"}, 422),
    ("/skills/abc", {"project_id": "{project}\x00"}, 422),
    ("/skills/abc/SKILL.md", {"project_id": "{project}\x00"}, 422),
    ("/skills/abc/index.json", {"project_id": "{project}\x00"}, 422),
    ("/skills/abc/references/a.md", {"project_id": "{project}\x00"}, 422),
    ("/skills/ab%00c", {"project_id": "{project}"}, 400),
    ("/skills/abc/a%00.md", {"project_id": "{project}"}, 400),
]


@pytest.mark.parametrize(("path", "params", "status"), GETS)
async def test_unstorable_query_and_path_parameters_are_refused_after_the_key(
    client, world, path, params, status
):
    params = {k: v.format(project=world.direct.id) for k, v in params.items()}
    async with _raw_client(client) as raw:
        refused = await raw.get(path, params=params, headers={"X-API-Key": world.read_key})
        assert refused.status_code == status, refused.text
        if status == 422:
            assert refused.json()["error"]["code"] == "invalid_request"
            assert "NUL" in refused.json()["error"]["message"]
        unauthenticated = await raw.get(path, params=params, headers={"X-API-Key": "stk_bad"})
        assert unauthenticated.status_code == 401  # the key is checked before any parameter (spec 7, rule 2)


def _bodies(project_id: str) -> list[tuple[str, dict]]:
    prompt = {"project_id": project_id, "prompt_name": "p", "content": "c"}
    skill = {"project_id": project_id, "skill_name": "abc", "skill_md": SKILL_MD}
    return [
        (PATH, {**prompt, "project_id": project_id + NUL}),
        (PATH, {**prompt, "commit_message": "m" + NUL}),
        (PATH, {**prompt, "content": "c\ud800"}),
        (PATH, {**prompt, "content": [{"role": "user", "content": "\udc00"}]}),
        (PATH, {**prompt, "config": {"model\ud800": "x"}}),
        ("/prompts/p/rollback", {"project_id": project_id + NUL, "version": 1}),
        ("/prompts/p/rollback", {"project_id": project_id, "version": 1, "commit_message": NUL}),
        ("/prompts/p%00/rollback", {"project_id": project_id, "version": 1}),
        ("/skills/active-version", {**skill, "project_id": project_id + NUL}),
        ("/skills/active-version", {**skill, "skill_name": "abc" + NUL}),
        ("/skills/active-version", {**skill, "skill_md": SKILL_MD + NUL}),
        ("/skills/active-version", {**skill, "commit_message": NUL}),
        ("/skills/active-version", {**skill, "files": {"a.txt": "\ud800"}}),
    ]


async def _counts(sessions):
    async with sessions() as s:
        return [
            (await s.execute(select(func.count()).select_from(t))).scalar_one()
            for t in (PromptVersion, SkillVersion, OutboxEvent)
        ]


async def test_unstorable_publish_bodies_are_422_and_write_nothing(client, world, sessions):
    await _publish(client, world.write_key, world.direct.id)
    before = await _counts(sessions)
    headers = {"X-API-Key": world.write_key, "content-type": "application/json"}
    async with _raw_client(client) as raw:
        for path, body in _bodies(world.direct.id):
            # json.dumps writes a lone surrogate as its \\ud800 escape: what a client can really send
            r = await raw.post(path, content=json.dumps(body).encode(), headers=headers)
            assert r.status_code == 422 and r.json()["error"]["code"] == "invalid_request", (
                path,
                body,
                r.text,
            )
        for deep in (b'{"content": ' + b"[" * 100_000, b"[" * 50_000 + b"]" * 50_000):
            r = await raw.post(PATH, content=deep, headers=headers)
            assert r.status_code == 422, r.text
    assert await _counts(sessions) == before
    # a NUL inside a JSON value is storable: JSON text escapes it
    await _publish(client, world.write_key, world.direct.id, content="a\x00b")
