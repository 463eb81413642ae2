"""Guardrail policies (issue 31): publish, the active read with ETag/304, listing, history, rollback, one
policy.published.v1 event per activation; a policy that is not a valid guardrails configuration, or that carries a
secret, is a 422 naming the key path, and nothing is stored."""

import json

import pytest
from sqlalchemy import func, select

from stockade.identity import keys
from stockade.prompt_api.tables import OutboxEvent, Policy, PolicyVersion

PUBLISH = "/policies/active-version"
STRICT = """guardrails:
  checks:
    pii:
      enabled: true
      default_action: block
"""
LENIENT = """guardrails:
  checks:
    pii:
      enabled: false
"""


def body(project_id, yaml=STRICT, name="default", **extra):
    return {"project_id": project_id, "policy_name": name, "yaml": yaml, **extra}


async def policy_events(sessions, project_id):
    async with sessions() as s:
        rows = (
            await s.execute(
                select(OutboxEvent).where(OutboxEvent.subject == f"policy.published.v1.{project_id}")
            )
        ).scalars()
        return [json.loads(r.payload) for r in rows]


async def stored_rows(sessions):
    async with sessions() as s:
        policies = (await s.execute(select(func.count()).select_from(Policy))).scalar_one()
        versions = (await s.execute(select(func.count()).select_from(PolicyVersion))).scalar_one()
        return policies, versions


async def test_publish_read_list_history_and_rollback(client, world, sessions):
    w = {"X-API-Key": world.write_key}
    pid = world.direct.id
    first = await client.post(PUBLISH, headers=w, json=body(pid, commit_message="strict"))
    assert first.status_code == 201, first.text
    v1 = first.json()
    assert v1["version"] == 1 and v1["yaml"] == STRICT and v1["published_by"] == world.alice.id
    assert first.headers["ETag"] == f'"1-{v1["sha256"]}"'
    second = await client.post(PUBLISH, headers=w, json=body(pid, LENIENT))
    assert second.status_code == 201 and second.json()["version"] == 2

    # the active read: header key (preferred) or query key, ETag and 304
    params = {"project_id": pid, "policy_name": "default"}
    read = await client.get("/policies/active-version", params=params, headers={"X-API-Key": world.read_key})
    assert read.status_code == 200 and read.json()["yaml"] == LENIENT and read.json()["version"] == 2
    etag = read.headers["ETag"]
    same = await client.get(
        "/policies/active-version",
        params={**params, "api_key": world.read_key},
        headers={"If-None-Match": etag},
    )
    assert same.status_code == 304 and same.content == b"" and same.headers["ETag"] == etag

    listed = await client.get("/policies", params={"project_id": pid}, headers=w)
    assert listed.status_code == 200
    [summary] = listed.json()
    assert summary["policy_name"] == "default" and summary["active_version"] == 2
    assert summary["active"]["yaml"] == LENIENT
    history = await client.get("/policies/default/versions", params={"project_id": pid}, headers=w)
    assert [v["version"] for v in history.json()] == [2, 1]

    # rollback: version 1's YAML becomes version 3, active; the old ETag no longer matches
    back = await client.post("/policies/default/rollback", headers=w, json={"project_id": pid, "version": 1})
    assert back.status_code == 201, back.text
    assert back.json()["version"] == 3 and back.json()["yaml"] == STRICT
    assert back.json()["commit_message"] == "rollback to version 1"
    after = await client.get(
        "/policies/active-version",
        params=params,
        headers={"X-API-Key": world.read_key, "If-None-Match": etag},
    )
    assert after.status_code == 200 and after.json()["version"] == 3
    missing = await client.post(
        "/policies/default/rollback", headers=w, json={"project_id": pid, "version": 9}
    )
    assert missing.status_code == 404

    # one event per activation (two publishes, one rollback), on the project's subject
    events = await policy_events(sessions, pid)
    assert sorted(e["version"] for e in events) == [1, 2, 3]
    assert {(e["policy_name"], e["project_id"], e["published_by"]) for e in events} == {
        ("default", pid, world.alice.id)
    }


async def test_an_unknown_policy_is_the_uniform_404_and_its_history_a_404(client, world):
    w = {"X-API-Key": world.write_key}
    read = await client.get(
        "/policies/active-version", params={"project_id": world.direct.id, "policy_name": "nope"}, headers=w
    )
    no_params = await client.get("/policies/active-version", headers=w)
    prompt_404 = await client.get(
        "/prompts/active-prompt-version",
        params={"api_key": world.write_key, "project_id": world.direct.id, "prompt_name": "nope"},
    )
    assert read.status_code == no_params.status_code == 404
    assert read.content == no_params.content == prompt_404.content
    history = await client.get("/policies/nope/versions", params={"project_id": world.direct.id}, headers=w)
    assert history.status_code == 404


def _stockade_key() -> str:
    return keys.generate_key().plaintext


@pytest.mark.parametrize(
    ("yaml", "code", "path"),
    [
        (
            "guardrails:\n  checks:\n    pii:\n      default_action: explode\n",
            "invalid_policy",
            "guardrails.checks.pii.default_action",
        ),
        (
            "guardrails:\n  checks:\n    pii:\n      enabled: true\n    piii: {}\n",
            "invalid_policy",
            "guardrails.checks.piii",
        ),
        ("models:\n  - provider: openai\n", "invalid_policy", "models.0.model"),
        ("guardrails: [1, 2]\n", "invalid_policy", "guardrails"),
        ("- a\n- b\n", "invalid_policy", ""),
        ("a: &x [1]\nb: *x\n", "invalid_policy", ""),
        ("guardrails: {checks: {pii: {enabled: true}\n", "invalid_policy", ""),
        (
            "guardrails:\n  storage:\n    enabled: true\n    api_key: hunter2hunter2\n",
            "policy_has_secret",
            "guardrails.storage.api_key",
        ),
        (
            "guardrails:\n  checks:\n    toxicity:\n      api_key: abc\n",
            "policy_has_secret",
            "guardrails.checks.toxicity.api_key",
        ),
        (
            "guardrails:\n  trust:\n    agents:\n      - id: planner\n        keys:\n          - {id: k1, secret: s3cr3t}\n",
            "policy_has_secret",
            "guardrails.trust.agents.0.keys.0.secret",
        ),
        (
            "guardrails:\n  checks:\n    pii:\n      password: correct-horse\n",
            "policy_has_secret",
            "guardrails.checks.pii.password",
        ),
        (
            "models:\n  - provider: openai\n    model: gpt-4o\n    name: AKIAQ3EGRT7PLMZK5VXC\n",
            "policy_has_secret",
            "models.0.name",
        ),
        (
            'guardrails:\n  checks:\n    pii:\n      entities: [PERSON, "{key}"]\n',
            "policy_has_secret",
            "guardrails.checks.pii.entities.1",
        ),
    ],
)
async def test_an_invalid_policy_is_a_422_naming_the_key_path_and_nothing_is_stored(
    client, world, sessions, yaml, code, path
):
    w = {"X-API-Key": world.write_key}
    text = yaml.replace("{key}", _stockade_key())
    refused = await client.post(PUBLISH, headers=w, json=body(world.direct.id, text))
    assert refused.status_code == 422, refused.text
    error = refused.json()["error"]
    assert error["code"] == code and error["details"]["path"] == path
    assert error["message"].startswith(f"{path}: " if path else "the policy")
    for secret in ("hunter2", "s3cr3t", "correct-horse", "AKIA", "stk_"):
        assert secret not in refused.text  # a secret is never echoed
    assert await stored_rows(sessions) == (0, 0)
    assert await policy_events(sessions, world.direct.id) == []


async def test_size_limit_and_references_to_secrets(client, world, sessions, app_factory):
    small = await app_factory(limits={"max_policy_bytes": 200})
    w = {"X-API-Key": world.write_key}
    big = "guardrails:\n  checks:\n    pii:\n      entities: [" + ", ".join(["PERSON"] * 60) + "]\n"
    refused = await small.post(PUBLISH, headers=w, json=body(world.direct.id, big))
    assert refused.status_code == 422 and "limit is 200" in refused.text
    # where a secret lives is not a secret: environment variables and files are accepted
    references = (
        "models:\n  - provider: openai\n    model: gpt-4o\n    api_key_env: OPENAI_API_KEY\n"
        "guardrails:\n  storage:\n    enabled: true\n"
    )
    accepted = await client.post(PUBLISH, headers=w, json=body(world.direct.id, references))
    assert accepted.status_code == 201, accepted.text
    assert await stored_rows(sessions) == (1, 1)
