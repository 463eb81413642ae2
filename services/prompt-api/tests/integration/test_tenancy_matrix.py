"""The tenancy matrix of prompt-api (docs/permissions.md, spec 5.1 and 7): two organisations, a key of each kind
and role, every route of prompt-api taken from its own router (a route without a rule fails the first test), each
answering as the permission model says.

Organisation A has the Manual review project ``pa``: ``member_a`` is a member (a write key; ``reader_a`` is a read
key of the same user, ``session_a`` the user's console session credential), ``approver_a`` holds the approver
tag, ``outsider_a`` belongs to organisation A but to no project. Organisation B has ``pb`` with ``member_b``.
The keys that open nothing: none at all, a revoked key, an expired console credential, and an ingest key of
``pa`` (ingest keys open guardrail-ingest only). Every probe aims at ``pa``'s prompts, skills and proposals.
Runs on SQLite and on a real PostgreSQL (the ``db_url`` fixture).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import httpx
import pytest

from stockade import identity
from stockade.identity.session_keys import CREDENTIAL_TTL
from stockade.prompt_api.main import create_app
from stockade.runtime.db_types import utcnow
from stockade.testing.asgi import routes_of

ROLES = (
    "anonymous",
    "revoked",
    "expired",
    "ingest_a",
    "member_b",
    "outsider_a",
    "reader_a",
    "member_a",
    "session_a",
    "approver_a",
)
"""The order every rule runs in: single-use actions (approve, reject) succeed for the last allowed role."""
NO_KEY = ROLES[:4]  # what authenticates as nobody: 401 where keys are checked, the uniform 404 on the read
NOT_MEMBERS = ("member_b", "outsider_a")
MEMBERS = ("reader_a", "member_a", "session_a", "approver_a")
WRITERS = ("member_a", "session_a", "approver_a")

POLICY = "guardrails:\n  checks:\n    pii:\n      enabled: true\n"
SKILL_MD = """---
name: {name}
description: How to answer.
---
# Guide

Be brief.
"""


@dataclass
class World:
    pa: str
    pb: str
    keys: dict[str, str | None]
    proposals: dict[str, str]  # "prompt-approve", "prompt-reject", "skill-approve", "skill-reject"


@pytest.fixture
async def world(client, sessions, console_credential) -> World:
    async with sessions() as s:
        org_a = await identity.create_organisation(s, "org-a")
        org_b = await identity.create_organisation(s, "org-b")
        pa = await identity.create_project(s, org_a.id, "pa", "manual-review")
        pb = await identity.create_project(s, org_b.id, "pb")
        users = {r: await identity.create_user(s, f"{r}@example.org") for r in ("a", "approver", "b", "out")}
        await identity.add_project_member(s, pa.id, users["a"].id)
        await identity.add_project_member(s, pa.id, users["approver"].id)
        await identity.grant_tag(s, pa.id, users["approver"].id)
        await identity.add_project_member(s, pb.id, users["b"].id)
        await identity.add_organisation_member(s, org_a.id, users["out"].id)
        revoked = await identity.create_api_key(s, users["a"].id, scope="write")
        await identity.revoke_api_key(s, revoked.id)
        await s.commit()  # console_credential writes in a session of its own
        expired = (await console_credential(users["a"].id, utcnow() - CREDENTIAL_TTL - timedelta(1)))[1]
        session_a = (await console_credential(users["a"].id))[1]
        keys: dict[str, str | None] = {
            "anonymous": None,
            "revoked": revoked.key,
            "expired": expired,
            "ingest_a": (await identity.create_api_key(s, users["a"].id, scope="ingest", project=pa.id)).key,
            "member_b": (await identity.create_api_key(s, users["b"].id, scope="write")).key,
            "outsider_a": (await identity.create_api_key(s, users["out"].id, scope="write")).key,
            "reader_a": (await identity.create_api_key(s, users["a"].id, scope="read")).key,
            "member_a": (await identity.create_api_key(s, users["a"].id, scope="write")).key,
            "session_a": session_a,
            "approver_a": (await identity.create_api_key(s, users["approver"].id, scope="write")).key,
        }
        await s.commit()

    async def post(who: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
        answer = await client.post(path, json=body, headers={"X-API-Key": keys[who] or ""})
        assert answer.status_code in (200, 201), answer.text
        return dict(answer.json())

    publish = "/prompts/active-prompt-version"
    for name in ("greet", "bye"):
        for text in ("v1", "v2"):
            await post("approver_a", publish, {"project_id": pa.id, "prompt_name": name, "content": text})
    await post("member_b", publish, {"project_id": pb.id, "prompt_name": "greet", "content": "B"})
    for name in ("guide", "tips"):
        skill = {
            "project_id": pa.id,
            "skill_name": name,
            "skill_md": SKILL_MD.format(name=name),
            "files": {"references/a.md": "A\n"},
        }
        await post("approver_a", "/skills/active-version", skill)
    await post(
        "approver_a", "/policies/active-version", {"project_id": pa.id, "policy_name": "p", "yaml": POLICY}
    )
    proposals = {}
    for verdict in ("approve", "reject"):
        made = await post("member_a", "/policies/p/proposals", {"project_id": pa.id, "yaml": POLICY})
        proposals[f"policy-{verdict}"] = made["id"]
    for verdict, name in (("approve", "greet"), ("reject", "bye")):
        made = await post("member_a", f"/prompts/{name}/proposals", {"project_id": pa.id, "content": "new"})
        proposals[f"prompt-{verdict}"] = made["id"]
    for verdict, name in (("approve", "guide"), ("reject", "tips")):
        md = SKILL_MD.format(name=name).replace("brief", "kind")
        made = await post("member_a", f"/skills/{name}/proposals", {"project_id": pa.id, "skill_md": md})
        proposals[f"skill-{verdict}"] = made["id"]
    return World(pa.id, pb.id, keys, proposals)


# --- the rules ------------------------------------------------------------------------------------------------
Expect = dict[str, int]
Probe = Callable[[World, str], dict[str, Any]]  # (world, role) -> request kwargs


@dataclass(frozen=True)
class Rule:
    method: str
    template: str
    probe: Probe
    expect: Expect


def everyone(status: int) -> Expect:
    return dict.fromkeys(ROLES, status)


def listing() -> Expect:
    """Spec 5.1: reading under /prompts (but the uniform read) and /skills needs project membership."""
    return {r: 401 if r in NO_KEY else 403 if r in NOT_MEMBERS else 200 for r in ROLES}


def uniform_read() -> Expect:
    """Spec 5.1 and 7.1: an organisation member reads; every failure is the one 404."""
    return {r: 404 if r in (*NO_KEY, "member_b") else 200 for r in ROLES}


def publishing(status: int = 201) -> Expect:
    """Spec 5.1: write scope, membership, and on Manual review the approver tag; 401 for no key (spec 7)."""
    return {r: 401 if r in NO_KEY else status if r == "approver_a" else 403 for r in ROLES}


def proposing() -> Expect:
    """A member with a write key proposes on a Manual review project (prompt-api README, "Manual review")."""
    return {r: 401 if r in NO_KEY else 201 if r in WRITERS else 403 for r in ROLES}


def _headers(w: World, role: str) -> dict[str, str]:
    key = w.keys[role]
    return {"X-API-Key": key} if key else {}


def get(path: str, **params: str) -> Probe:
    def probe(w: World, role: str) -> dict[str, Any]:
        values = {k: v.format(pa=w.pa) for k, v in params.items()}
        return {"url": path.format(**w.proposals), "params": values, "headers": _headers(w, role)}

    return probe


def post(path: str, make: Callable[[World, str], dict[str, Any]]) -> Probe:
    def probe(w: World, role: str) -> dict[str, Any]:
        return {"url": path.format(**w.proposals), "json": make(w, role), "headers": _headers(w, role)}

    return probe


def policy_read(w: World, role: str) -> dict[str, Any]:
    params = {"project_id": w.pa, "policy_name": "p"}
    return {"url": "/policies/active-version", "params": params, "headers": _headers(w, role)}


def read_query(w: World, role: str) -> dict[str, Any]:
    params = {"project_id": w.pa, "prompt_name": "greet"}
    key = w.keys[role]
    return {
        "url": "/prompts/active-prompt-version",
        "params": {**params, **({"api_key": key} if key else {})},
    }


def decision(comment: str | None = None) -> Callable[[World, str], dict[str, Any]]:
    return lambda w, r: {"project_id": w.pa, "comment": comment}


RULES: list[Rule] = [
    Rule("GET", "/healthz", get("/healthz"), everyone(200)),
    Rule("GET", "/readyz", get("/readyz"), everyone(200)),
    Rule("GET", "/metrics", get("/metrics"), everyone(200)),
    Rule("GET", "/openapi.json", get("/openapi.json"), everyone(200)),
    Rule("GET", "/docs", get("/docs"), everyone(200)),
    Rule("GET", "/docs/oauth2-redirect", get("/docs/oauth2-redirect"), everyone(200)),
    Rule("GET", "/redoc", get("/redoc"), everyone(200)),
    # prompts
    Rule("GET", "/prompts/active-prompt-version", read_query, uniform_read()),
    Rule("GET", "/prompts", get("/prompts", project_id="{pa}"), listing()),
    Rule(
        "GET", "/prompts/{prompt_name}/versions", get("/prompts/greet/versions", project_id="{pa}"), listing()
    ),
    Rule(
        "POST",
        "/prompts/active-prompt-version",
        post(
            "/prompts/active-prompt-version",
            lambda w, r: {"project_id": w.pa, "prompt_name": "greet", "content": f"by {r}"},
        ),
        publishing(),
    ),
    Rule(
        "POST",
        "/prompts/{prompt_name}/rollback",
        post("/prompts/greet/rollback", lambda w, r: {"project_id": w.pa, "version": 1}),
        publishing(),
    ),
    Rule(
        "POST",
        "/prompts/{prompt_name}/proposals",
        post("/prompts/greet/proposals", lambda w, r: {"project_id": w.pa, "content": f"idea of {r}"}),
        proposing(),
    ),
    # guardrail policies (the prompt rules, row for row)
    Rule("GET", "/policies/active-version", policy_read, uniform_read()),
    Rule("GET", "/policies", get("/policies", project_id="{pa}"), listing()),
    Rule(
        "GET", "/policies/{policy_name}/versions", get("/policies/p/versions", project_id="{pa}"), listing()
    ),
    Rule(
        "POST",
        "/policies/active-version",
        post(
            "/policies/active-version", lambda w, r: {"project_id": w.pa, "policy_name": "p", "yaml": POLICY}
        ),
        publishing(),
    ),
    Rule(
        "POST",
        "/policies/{policy_name}/rollback",
        post("/policies/p/rollback", lambda w, r: {"project_id": w.pa, "version": 1}),
        publishing(),
    ),
    Rule(
        "POST",
        "/policies/{policy_name}/proposals",
        post("/policies/p/proposals", lambda w, r: {"project_id": w.pa, "yaml": f"# {r}\n{POLICY}"}),
        proposing(),
    ),
    Rule("GET", "/policy-reviews", get("/policy-reviews", project_id="{pa}"), listing()),
    Rule(
        "GET",
        "/policy-reviews/{proposal_id}",
        get("/policy-reviews/{policy-approve}", project_id="{pa}"),
        listing(),
    ),
    Rule(
        "POST",
        "/policy-reviews/{proposal_id}/approve",
        post("/policy-reviews/{policy-approve}/approve", decision()),
        publishing(200),
    ),
    Rule(
        "POST",
        "/policy-reviews/{proposal_id}/reject",
        post("/policy-reviews/{policy-reject}/reject", decision("no")),
        publishing(200),
    ),
    # skills
    Rule("GET", "/skills", get("/skills", project_id="{pa}"), listing()),
    Rule("GET", "/skills/index.json", get("/skills/index.json", project_id="{pa}"), listing()),
    Rule("GET", "/skills/{skill_name}", get("/skills/guide", project_id="{pa}"), listing()),
    Rule("GET", "/skills/{skill_name}/SKILL.md", get("/skills/guide/SKILL.md", project_id="{pa}"), listing()),
    Rule(
        "GET",
        "/skills/{skill_name}/index.json",
        get("/skills/guide/index.json", project_id="{pa}"),
        listing(),
    ),
    Rule(
        "GET",
        "/skills/{skill_name}/{path:path}",
        get("/skills/guide/references/a.md", project_id="{pa}"),
        listing(),
    ),
    Rule(
        "POST",
        "/skills/active-version",
        post(
            "/skills/active-version",
            lambda w, r: {
                "project_id": w.pa,
                "skill_name": "guide",
                "skill_md": SKILL_MD.format(name="guide"),
            },
        ),
        publishing(),
    ),
    Rule(
        "POST",
        "/skills/{skill_name}/proposals",
        post(
            "/skills/guide/proposals",
            lambda w, r: {"project_id": w.pa, "skill_md": SKILL_MD.format(name="guide") + f"\n{r}\n"},
        ),
        proposing(),
    ),
    # reviews
    Rule("GET", "/prompt-reviews", get("/prompt-reviews", project_id="{pa}"), listing()),
    Rule(
        "GET",
        "/prompt-reviews/{proposal_id}",
        get("/prompt-reviews/{prompt-approve}", project_id="{pa}"),
        listing(),
    ),
    Rule(
        "POST",
        "/prompt-reviews/{proposal_id}/approve",
        post("/prompt-reviews/{prompt-approve}/approve", decision()),
        publishing(200),
    ),
    Rule(
        "POST",
        "/prompt-reviews/{proposal_id}/reject",
        post("/prompt-reviews/{prompt-reject}/reject", decision("no")),
        publishing(200),
    ),
    Rule("GET", "/skill-reviews", get("/skill-reviews", project_id="{pa}"), listing()),
    Rule(
        "GET",
        "/skill-reviews/{proposal_id}",
        get("/skill-reviews/{skill-approve}", project_id="{pa}"),
        listing(),
    ),
    Rule(
        "POST",
        "/skill-reviews/{proposal_id}/approve",
        post("/skill-reviews/{skill-approve}/approve", decision()),
        publishing(200),
    ),
    Rule(
        "POST",
        "/skill-reviews/{proposal_id}/reject",
        post("/skill-reviews/{skill-reject}/reject", decision("no")),
        publishing(200),
    ),
]


def test_every_route_of_the_app_has_a_rule(settings_for, tmp_path):
    app = create_app(settings_for(f"sqlite+aiosqlite:///{tmp_path}/x.db"))
    routes = routes_of(app)
    ruled = {(r.method, r.template) for r in RULES}
    assert routes - ruled == set(), "routes without a rule in the tenancy matrix (docs/permissions.md)"
    assert ruled - routes == set(), "rules for routes the app does not have"


async def test_every_route_answers_each_key_as_the_permission_model_says(client, world):
    wrong = []
    for rule in RULES:
        for role in ROLES:
            kwargs = rule.probe(world, role)
            answer: httpx.Response = await client.request(rule.method, **kwargs)
            want = rule.expect[role]
            if answer.status_code != want:
                wrong.append(
                    f"{rule.method} {kwargs['url']} as {role}: want {want}, got {answer.status_code}"
                )
    assert wrong == [], "\n".join(wrong)


async def test_another_organisations_project_answers_like_an_unknown_one(client, world):
    """The uniform read cannot tell a foreign project from one that does not exist (spec 7.1), and a listing of a
    foreign project is the non-member's 403, the same as for a project of one's own organisation."""
    key = world.keys["member_b"]
    assert key is not None
    answers = []
    for project in (world.pa, "0" * 32):
        params = {"api_key": key, "project_id": project, "prompt_name": "greet"}
        answers.append(await client.get("/prompts/active-prompt-version", params=params))
    assert answers[0].status_code == answers[1].status_code == 404
    assert answers[0].content == answers[1].content
    drop = {"date", "content-length"}
    assert {k: v for k, v in answers[0].headers.items() if k not in drop} == {
        k: v for k, v in answers[1].headers.items() if k not in drop
    }
    own = await client.get("/prompts", params={"project_id": world.pb}, headers={"X-API-Key": key})
    assert own.status_code == 200 and [p["prompt_name"] for p in own.json()] == ["greet"]
