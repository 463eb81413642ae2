"""Concurrent reads on PostgreSQL share statements (read_batch): each request still gets its own answer, resolved
from the rows current when its statement ran (a revocation applies to the next request, batched or not)."""

import asyncio

import asyncpg
import pytest

from stockade import identity
from stockade.prompt_api.settings import ReadPathSettings

PATH = "/prompts/active-prompt-version"
UNIFORM_404 = b'{"error":{"code":"not_found","message":"not found"}}'

pytestmark = pytest.mark.postgres


@pytest.mark.parametrize("db_url", ["postgres"], indirect=True)
async def test_concurrent_reads_each_get_their_own_answer(app_factory, world, sessions, monkeypatch):
    client = await app_factory(read_path=ReadPathSettings(statements_in_flight=1))
    for name, content in (("a", "alpha"), ("b", [{"role": "system", "content": "beta"}])):
        r = await client.post(
            PATH,
            headers={"X-API-Key": world.write_key},
            json={"project_id": world.direct.id, "prompt_name": name, "content": content},
        )
        assert r.status_code == 201, r.text
    async with sessions() as s:
        revoked = await identity.create_api_key(s, world.alice.id, scope="read")
        await identity.revoke_api_key(s, revoked.id)
        await s.commit()
    statements = 0
    real_fetch = asyncpg.connection.Connection.fetch

    def counted(self, *args, **kwargs):
        nonlocal statements
        statements += 1
        return real_fetch(self, *args, **kwargs)

    monkeypatch.setattr(asyncpg.connection.Connection, "fetch", counted)

    def params(key, name, project=world.direct.id):
        return {"api_key": key, "project_id": project, "prompt_name": name}

    cases = [
        (params(world.write_key, "a"), "alpha"),
        (params(world.read_key, "b"), [{"role": "system", "content": "beta"}]),
        (params(revoked.key, "a"), None),
        (params(world.carol_key, "b"), [{"role": "system", "content": "beta"}]),
        (params(world.write_key, "missing"), None),
        (params(world.write_key, "a", world.foreign.id), None),
        (params("junk", "a"), None),
    ] * 4
    answers = await asyncio.gather(*(client.get(PATH, params=p) for p, _ in cases))
    for (p, expected), r in zip(cases, answers, strict=True):
        if expected is None:
            assert r.status_code == 404 and r.content == UNIFORM_404, p
        else:
            assert r.status_code == 200, p
            assert r.json()["content"] == expected and r.json()["prompt_name"] == p["prompt_name"], p
    assert statements < len(cases)  # requests that arrived while a statement ran were sent together

    async with sessions() as s:  # revoking the key that just read: the next request, batched, sees it
        await identity.revoke_api_key(s, world.write_key_id)
        await s.commit()
    answers = await asyncio.gather(*(client.get(PATH, params=params(world.write_key, "a")) for _ in range(8)))
    assert all(r.status_code == 404 and r.content == UNIFORM_404 for r in answers)
