"""schemathesis against prompt-api's OpenAPI: the real app on real PostgreSQL and NATS, with a real write key.

Every operation of ``app.openapi()`` gets generated requests (positive and negative, the coverage phase's
boundary values, then fuzzing), sent with the X-API-Key header of a key whose owner is a member of two projects
(one publishing directly, one under Manual review). Half the generated ``project_id`` values (and ``api_key``
on the uniform read) are replaced by the real ones, so requests get past authorisation into the handlers.
Checks: no 5xx, status code documented, content type documented, body matches the documented schema.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import hypothesis.strategies as st
import pytest
import requests
import schemathesis
from sqlalchemy.ext.asyncio import AsyncEngine

from stockade import identity
from stockade.prompt_api.main import create_app
from stockade.prompt_api.settings import PromptApiSettings
from stockade.runtime.db import create_engine, session_factory
from stockade.runtime.settings import DatabaseSettings, NatsSettings
from stockade.testing.asyncbridge import run_blocking
from stockade.testing.postgres import temporary_database

MAX_EXAMPLES = 25  # per operation, fuzzing phase; the coverage phase adds its own boundary cases


def _openapi() -> dict[str, Any]:
    """The schema the app serves at /openapi.json (built without connecting anywhere)."""
    settings = PromptApiSettings(db=DatabaseSettings(url="sqlite+aiosqlite:///:memory:"))
    return create_app(settings).openapi()


CONFIG = {
    "seed": 16,
    "generation": {"deterministic": True, "max-examples": MAX_EXAMPLES, "database": "none"},
    "phases": {"examples": {"enabled": False}, "stateful": {"enabled": False}},
    "checks": {
        "enabled": False,
        "not_a_server_error": {"enabled": True},
        "status_code_conformance": {"enabled": True},
        "content_type_conformance": {"enabled": True},
        "response_schema_conformance": {"enabled": True},
    },
}
schema = schemathesis.openapi.from_dict(_openapi(), config=schemathesis.Config.from_dict(CONFIG))


@dataclass
class World:
    base_url: str
    key: str
    projects: list[str]
    proposals: list[str]
    skill_proposals: list[str]
    policy_proposals: list[str]


WORLD: list[World] = []  # set by the module fixture; read by the hooks while examples are generated


async def _make_world(url: str) -> tuple[str, list[str]]:
    engine: AsyncEngine = create_engine(url)
    try:
        async with session_factory(engine)() as s:
            org = await identity.create_organisation(s, "fuzz")
            user = await identity.create_user(s, "fuzzer@example.org")
            direct = await identity.create_project(s, org.id, "direct")
            review = await identity.create_project(s, org.id, "review", "manual-review")
            for project in (direct, review):
                await identity.add_project_member(s, project.id, user.id)
            await identity.grant_tag(s, review.id, user.id)
            key = await identity.create_api_key(s, user.id, scope="write")
            await s.commit()
        return key.key, [direct.id, review.id]
    finally:
        await engine.dispose()


SKILL_MD = "---\nname: triage\ndescription: Sort incoming tickets.\n---\n# Triage\n"
# Every version of the seeded skill carries these files (published, proposed, or drawn by the fuzzer), so a
# version the fuzzer publishes or approves still serves the seeded file path.
SKILL_FILES = {
    "notes.txt": "Triage notes\n",
    "references/levels.md": "# Levels\n",
    "scripts/run.sh": "#!/bin/sh\necho hi\n",
}
SEEDED = {
    "prompt_name": "greeting",
    "skill_name": "triage",
    "policy_name": "support",
    "path": "notes.txt",  # no "/": kept as sent
}
POLICY_YAML = "guardrails:\n  checks:\n    pii:\n      enabled: true\n      default_action: {action}\n"


def _seed(base_url: str, key: str, project: str) -> tuple[list[str], list[str], list[str]]:
    """A prompt and a guardrail policy with two versions each, a skill with files and (under review) prompt,
    skill and policy proposals, so reads, rollbacks and decisions find something; returns the proposals' ids."""
    headers = {"X-API-Key": key}
    for text in ("Hello {{name}}", "Hi {{name}}"):
        body = {"project_id": project, "prompt_name": "greeting", "content": text}
        r = requests.post(f"{base_url}/prompts/active-prompt-version", json=body, headers=headers, timeout=30)
        assert r.status_code == 201, r.text
    skill = {
        "project_id": project,
        "skill_name": "triage",
        "skill_md": SKILL_MD,
        "files": SKILL_FILES,
    }
    r = requests.post(f"{base_url}/skills/active-version", json=skill, headers=headers, timeout=30)
    assert r.status_code == 201, r.text
    proposals = []
    for text in ("Hey {{name}}", "Howdy {{name}}", "Yo {{name}}", "Hello there {{name}}"):
        body = {"project_id": project, "content": text}
        r = requests.post(f"{base_url}/prompts/greeting/proposals", json=body, headers=headers, timeout=30)
        if r.status_code == 201:  # only on the Manual review project
            proposals.append(r.json()["id"])
    skill_proposals = []
    for n in range(4):
        body = {"project_id": project, "skill_md": f"{SKILL_MD}Step {n}.\n", "files": SKILL_FILES}
        r = requests.post(f"{base_url}/skills/triage/proposals", json=body, headers=headers, timeout=30)
        if r.status_code == 201:
            skill_proposals.append(r.json()["id"])
    for action in ("block", "mask"):
        body = {"project_id": project, "policy_name": "support", "yaml": POLICY_YAML.format(action=action)}
        r = requests.post(f"{base_url}/policies/active-version", json=body, headers=headers, timeout=30)
        assert r.status_code == 201, r.text
    policy_proposals = []
    for action in ("block", "mask", "allow", "block"):
        body = {"project_id": project, "yaml": POLICY_YAML.format(action=action)}
        r = requests.post(f"{base_url}/policies/support/proposals", json=body, headers=headers, timeout=30)
        if r.status_code == 201:
            policy_proposals.append(r.json()["id"])
    return proposals, skill_proposals, policy_proposals


@pytest.fixture(scope="module")
def world(postgres_url: str, nats_url: str, serve_app) -> Iterator[World]:
    with temporary_database(postgres_url, "fuzz_prompt_api") as url:
        settings = PromptApiSettings(
            db=DatabaseSettings(url=url), nats=NatsSettings(url=nats_url), gc_freeze=False
        )
        app = create_app(settings)
        with serve_app(app) as base_url:  # the lifespan migrates the database first
            key, projects = run_blocking(lambda: _make_world(url))
            seeded = [_seed(base_url, key, project) for project in projects]
            proposals = [p for prompt_ids, _, _ in seeded for p in prompt_ids]
            skill_proposals = [p for _, skill_ids, _ in seeded for p in skill_ids]
            policy_proposals = [p for _, _, policy_ids in seeded for p in policy_ids]
            WORLD.append(World(base_url, key, projects, proposals, skill_proposals, policy_proposals))
            try:
                yield WORLD[-1]
            finally:
                WORLD.clear()


# Each hook offers the real values first: Hypothesis starts from the simplest example (the first element), so
# every operation is certain to get a request that reaches its handler, then draws among real and generated.
@schema.hook
def flatmap_query(ctx, query):
    if not isinstance(query, dict) or not WORLD or "project_id" not in query:
        return st.just(query)
    world = WORLD[-1]
    real = [{**query, "project_id": p} for p in reversed(world.projects)]  # the review project first
    for name in ("prompt_name", "policy_name"):
        if name in query:
            real = [{**r, name: SEEDED[name]} for r in real]
    if "api_key" in query:
        real = [{**r, "api_key": world.key} for r in real]
    return st.sampled_from([*real, query])


@schema.hook
def flatmap_path_parameters(ctx, path_parameters):
    if not isinstance(path_parameters, dict) or not WORLD:
        return st.just(path_parameters)
    seeded = {k: v for k, v in SEEDED.items() if k in path_parameters}
    if "proposal_id" in path_parameters:  # approve and reject get proposals of their own to decide
        path = ctx.operation.path if ctx.operation is not None else ""
        world = WORLD[-1]
        proposals = (
            world.skill_proposals
            if path.startswith("/skill-reviews")
            else world.policy_proposals
            if path.startswith("/policy-reviews")
            else world.proposals
        )
        mine = (
            proposals[0::2]
            if path.endswith("/approve")
            else proposals[1::2]
            if path.endswith("/reject")
            else proposals
        )
        return st.sampled_from([*({**path_parameters, "proposal_id": p} for p in mine), path_parameters])
    return st.sampled_from([{**path_parameters, **seeded}, path_parameters])


@schema.hook
def flatmap_body(ctx, body):
    if not isinstance(body, dict) or "project_id" not in body or not WORLD:
        return st.just(body)
    real = [{**body, "project_id": p} for p in reversed(WORLD[-1].projects)]
    if "skill_md" in body:  # a valid SKILL.md whose name matches, so a publish or a proposal can succeed
        named = {"skill_name": "triage"} if "skill_name" in body else {}
        real = [{**r, **named, "skill_md": SKILL_MD, "files": SKILL_FILES} for r in real] + real
    if "yaml" in body:  # a valid guardrails configuration, so a publish or a proposal can succeed
        named = {"policy_name": SEEDED["policy_name"]} if "policy_name" in body else {}
        real = [{**r, **named, "yaml": POLICY_YAML.format(action="block")} for r in real] + real
    if "comment" in body or set(body) == {"project_id"}:  # a decision: a rejection needs a comment
        real = [{**r, "comment": "needs work"} for r in real] + real
    return st.sampled_from([*real, body])


@schema.parametrize()
def test_prompt_api_conforms_to_its_openapi(case, world: World, http: requests.Session, answers) -> None:
    response = case.call_and_validate(base_url=world.base_url, session=http, headers={"X-API-Key": world.key})
    answers.setdefault(case.operation.label, []).append(response.status_code)


def test_the_fuzzing_got_past_authentication_into_the_handlers(answers: dict[str, list[int]]) -> None:
    """Guards the run above: a broken key or world would answer everything 401/403, which is documented and
    would pass. Every fuzzed operation got at least one success."""
    assert answers, "run with the fuzz test above"
    missing = {
        label: sorted(set(codes)) for label, codes in answers.items() if not any(c < 300 for c in codes)
    }
    assert not missing, missing
