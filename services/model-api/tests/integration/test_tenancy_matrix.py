"""The tenancy matrix of docs/permissions.md: two organisations, a user of each role, every route of model-api.

The routes come from the app's own router: a route without a rule here fails the first test. Each rule names
the answer for every role: allowed (200, 201, or 303 to somewhere other than the sign-in page), 403, 404, or
"login" (303 to the sign-in page) / 401 for anonymous callers. Real PostgreSQL, NATS, prompt-api on a socket
and the run store in ClickHouse (chdb), filled by guardrail-ingest's own sink.

Organisation A has the Manual review project ``pa`` (``member_a``; ``approver_a`` holds the approver tag);
organisation B has ``pb`` (``member_b``). ``admin`` is a platform administrator and a member of nothing;
``outsider`` is signed in and a member of nothing.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from stockade import identity
from stockade.contracts import ApiKeyRevoked, subjects
from stockade.guardrail_ingest.audit import to_record
from stockade.guardrail_ingest.sinks.clickhouse import ClickHouseSink
from stockade.model_api.main import create_app
from stockade.model_api.settings import PromptApiLink, RunStoreSettings
from stockade.testing.asgi import routes_of

from .conftest import SKILL_MD, ingest_reads, serve, store_batches

pytestmark = [pytest.mark.postgres, pytest.mark.nats, pytest.mark.clickhouse]

PASSWORD = "correct horse battery staple"
ROLES = ("anonymous", "outsider", "member_b", "admin", "member_a", "approver_a")
"""The order every rule runs in: single-use actions (approve, revoke) succeed for the last allowed role."""
SIGNED = ROLES[1:]
LOGIN = "login"


@dataclass
class World:
    console: Any
    pa: str
    pb: str
    clients: dict[str, httpx.AsyncClient]
    tokens: dict[str, str]
    proposal: str
    skill_proposal: str
    spare_key: str
    default_config: str
    table: str
    extra: dict[str, Any] = field(default_factory=dict)


def run_batch(run_id: str, project: str, at: datetime) -> dict:
    event = {
        "event_id": f"{run_id}-1",
        "kind": "check",
        "name": "pii",
        "occurred_at": at.isoformat(),
        "session_id": f"sess-{run_id}",
        "action": "mask",
        "payload": {"stage": "input", "duration_ms": 5.0, "score": 0.9, "finding_types": {"PERSON": 1}},
    }
    return {
        "run": {"run_id": run_id, "project_id": project, "agent_id": f"agent-{run_id}"},
        "events": [event],
    }


@pytest.fixture
async def world(
    settings_for, postgres_database, nats_url, clickhouse_dsn, unused_tcp_port_factory, unique_name
) -> AsyncIterator[World]:
    from stockade.prompt_api.main import create_app as create_prompt_api
    from stockade.prompt_api.settings import PromptApiSettings
    from stockade.runtime.settings import DatabaseSettings, HttpSettings, NatsSettings

    prompt_port = unused_tcp_port_factory()
    prompt_app = create_prompt_api(
        PromptApiSettings(
            db=DatabaseSettings(url=postgres_database),
            nats=NatsSettings(url=nats_url),
            http=HttpSettings(port=prompt_port),
            gc_freeze=False,
        ),
    )
    table = unique_name("guardrail_events")
    async with serve(prompt_app, prompt_port) as prompt_url:
        settings = settings_for(
            postgres_database,
            nats_url,
            0,
            prompt_api=PromptApiLink(url=prompt_url),
            runs=RunStoreSettings(page_size=25),
        )
        app = create_app(settings)
        async with app.router.lifespan_context(app):
            emails = {r: f"{unique_name(r)}@example.org" for r in SIGNED}
            async with app.state.service.sessions() as s:
                org_a = await identity.create_organisation(s, unique_name("org_a"))
                org_b = await identity.create_organisation(s, unique_name("org_b"))
                pa = await identity.create_project(s, org_a.id, "pa", "manual-review")
                pb = await identity.create_project(s, org_b.id, "pb")
                users = {r: await identity.create_user(s, e, PASSWORD) for r, e in emails.items()}
                for role, project in (("member_a", pa), ("approver_a", pa), ("member_b", pb)):
                    await identity.add_project_member(s, project.id, users[role].id)
                await identity.grant_tag(s, pa.id, users["approver_a"].id)
                await identity.grant_platform_admin(s, users["admin"].id)
                keys = {
                    r: (await identity.create_api_key(s, u.id, scope="write")).key for r, u in users.items()
                }
                spare = await identity.create_api_key(s, users["member_a"].id, scope="read")
                await s.commit()
            ids = await _publish(prompt_url, keys, pa.id, pb.id)
            now = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=1)
            await store_batches(
                clickhouse_dsn, table, [run_batch("run-aaa", pa.id, now), run_batch("run-bbb", pb.id, now)]
            )
            sink = ClickHouseSink(clickhouse_dsn, table)  # an audit record filed under no project
            unowned = ApiKeyRevoked(key_id="k0000000000", owner_id="u-nobody", project_id=None)
            await sink.write([to_record(subjects.APIKEY_REVOKED, unowned.model_dump_json().encode(), None)])
            reads = ingest_reads(sink, nats_url)  # guardrail-ingest answers the console's reads of the store
            await reads.__aenter__()
            clients: dict[str, httpx.AsyncClient] = {}
            tokens: dict[str, str] = {}
            transport = httpx.ASGITransport(app=app)
            try:
                for role in ROLES:
                    client = httpx.AsyncClient(transport=transport, base_url="http://testserver")
                    clients[role] = client
                    if role == "anonymous":
                        continue
                    form = {"email": emails[role], "password": PASSWORD, "next": "/models"}
                    assert (await client.post("/login", data=form)).status_code == 303
                    tokens[role] = (await client.get("/api/platform/session")).json()["csrfToken"]
                async with app.state.service.sessions() as s:
                    default = (await s.execute(_active_config())).scalar_one()
                yield World(
                    app,
                    pa.id,
                    pb.id,
                    clients,
                    tokens,
                    ids["proposal"],
                    ids["skill_proposal"],
                    spare.id,
                    default,
                    table,
                    extra={"emails": emails, "policy_proposal": ids["policy_proposal"]},
                )
            finally:
                for client in clients.values():
                    await client.aclose()
                await reads.__aexit__(None, None, None)
                await sink.aclose()


def _active_config() -> Any:
    from sqlalchemy import select

    from stockade.model_api.tables import DbConfig

    return select(DbConfig.id).where(DbConfig.is_active)


async def _publish(prompt_url: str, keys: dict[str, str], pa: str, pb: str) -> dict[str, str]:
    """pa: prompt ``greet`` v1, v2 and skill ``guide`` (approver_a), a pending prompt and skill proposal by
    member_a; pb: prompt ``greet`` v1 (member_b)."""
    async with httpx.AsyncClient(base_url=prompt_url) as api:

        async def post(who: str, path: str, body: dict) -> dict:
            answer = await api.post(path, json=body, headers={"X-API-Key": keys[who]})
            assert answer.status_code in (200, 201), answer.text
            return dict(answer.json())

        publish = "/prompts/active-prompt-version"
        for text in ("Hello.", "Hello there."):
            await post("approver_a", publish, {"project_id": pa, "prompt_name": "greet", "content": text})
        await post("member_b", publish, {"project_id": pb, "prompt_name": "greet", "content": "Hi B."})
        skill = {
            "project_id": pa,
            "skill_name": "refund-policy",
            "skill_md": SKILL_MD.format(description="d", body="b"),
        }
        await post("approver_a", "/skills/active-version", skill)
        proposal = await post("member_a", "/prompts/greet/proposals", {"project_id": pa, "content": "Hey."})
        md = SKILL_MD.format(description="d2", body="b2")
        skill_proposal = await post(
            "member_a", "/skills/refund-policy/proposals", {"project_id": pa, "skill_md": md}
        )
        guard = {"project_id": pa, "policy_name": "guard"}
        for action in ("mask", "block"):  # a guardrail policy with two versions, and a proposal
            yaml = f"guardrails:\n  checks:\n    pii:\n      default_action: {action}\n"
            await post("approver_a", "/policies/active-version", {**guard, "yaml": yaml})
        policy_proposal = await post(
            "member_a", "/policies/guard/proposals", {"project_id": pa, "yaml": yaml}
        )
    return {
        "proposal": proposal["id"],
        "skill_proposal": skill_proposal["id"],
        "policy_proposal": policy_proposal["id"],
    }


# --- the rules ------------------------------------------------------------------------------------------------
Expect = dict[str, int | str]
Probe = Callable[[World, str], dict[str, Any]]  # (world, role) -> request kwargs: url, data/json/params


@dataclass(frozen=True)
class Rule:
    method: str
    template: str
    probe: Probe
    expect: Expect


def everyone(status: int | str) -> Expect:
    return dict.fromkeys(ROLES, status)


def page(allowed: tuple[str, ...], status: int = 200, other: int = 404) -> Expect:
    """A console page: anonymous to the sign-in page, ``allowed`` roles ``status``, the rest ``other``."""
    return {r: LOGIN if r == "anonymous" else status if r in allowed else other for r in ROLES}


def api(allowed: tuple[str, ...], status: int = 200, other: int = 403) -> Expect:
    return {r: 401 if r == "anonymous" else status if r in allowed else other for r in ROLES}


A_MEMBERS = ("member_a", "approver_a")


def url(path: str) -> Probe:
    return lambda w, r: {"url": path.format(pa=w.pa, pb=w.pb)}


def form(path: str, **fields: str | Callable[[World, str], str]) -> Probe:
    def probe(w: World, role: str) -> dict[str, Any]:
        data = {k: v(w, role) if callable(v) else v for k, v in fields.items()}
        data["csrf_token"] = w.tokens.get(role, "")
        return {
            "url": path.format(
                pa=w.pa, pb=w.pb, p=w.proposal, sp=w.skill_proposal, key=w.spare_key, cfg=w.default_config
            ),
            "data": data,
        }

    return probe


def body(path: str, make: Callable[[World, str], dict[str, Any]] | None = None) -> Probe:
    def probe(w: World, role: str) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"url": path.format(cfg=w.default_config)}
        if make is not None:
            kwargs["json"] = make(w, role)
        kwargs["headers"] = {"X-CSRF-Token": w.tokens.get(role, "")}
        return kwargs

    return probe


def model(w: World, role: str) -> dict[str, Any]:
    return {"provider": "matrix", "model": {"model_id": f"m-{role}", "displayName": "M", "modelType": "chat"}}


def _model_form(w: World, role: str) -> str:
    return f"f-{role}"


RULES: list[Rule] = [
    Rule("GET", "/healthz", url("/healthz"), everyone(200)),
    Rule("GET", "/readyz", url("/readyz"), everyone(200)),
    Rule("GET", "/metrics", url("/metrics"), everyone(200)),
    Rule("GET", "/openapi.json", url("/openapi.json"), everyone(200)),
    # no /docs, /docs/oauth2-redirect or /redoc: their CDN script would run on the console's origin (L8)
    Rule("GET", "/static", url("/static/console.css"), everyone(200)),
    Rule("GET", "/login", url("/login"), {r: 200 if r == "anonymous" else 303 for r in ROLES}),
    Rule(
        "POST",
        "/login",
        form("/login", email=lambda w, r: f"nobody-{r}@example.org", password="wrong"),
        everyone(401),
    ),
    Rule(
        "POST",
        "/logout",
        lambda w, r: {"url": "/logout", "data": {"csrf_token": "forged"}},
        {r: LOGIN if r == "anonymous" else 403 for r in ROLES},
    ),
    Rule("GET", "/", url("/"), page(SIGNED, 303)),
    # the catalogue: every signed-in user (spec 4.2, 5.2)
    Rule("GET", "/api/platform/session", url("/api/platform/session"), api(SIGNED)),
    Rule("GET", "/api/platform/models", url("/api/platform/models"), api(SIGNED)),
    Rule("POST", "/api/platform/models", body("/api/platform/models", model), api(SIGNED, 201)),
    Rule(
        "DELETE",
        "/api/platform/models",
        lambda w, r: {
            **body("/api/platform/models")(w, r),
            "params": {"provider": "matrix", "model_id": f"m-{r}"},
        },
        api(SIGNED),
    ),
    Rule("GET", "/models", url("/models"), page(SIGNED)),
    Rule(
        "POST",
        "/models",
        form("/models", provider="matrix", model_id=_model_form, displayName="F", modelType="chat"),
        page(SIGNED, 303),
    ),
    Rule(
        "POST",
        "/models/delete",
        form("/models/delete", provider="matrix", model_id=_model_form),
        page(SIGNED, 303),
    ),
    # platform-wide settings: platform administrators only
    Rule("GET", "/api/platform/db-configs", url("/api/platform/db-configs"), api(SIGNED)),
    Rule(
        "POST",
        "/api/platform/db-configs",
        body("/api/platform/db-configs", lambda w, r: {"name": f"json-{r}", "db_type": "mongodb"}),
        api(("admin",), 201),
    ),
    Rule(
        "POST",
        "/api/platform/db-configs/{config_id}/activate",
        body("/api/platform/db-configs/{cfg}/activate"),
        api(("admin",)),
    ),
    Rule("GET", "/api/platform/audit", url("/api/platform/audit"), api(("admin",))),
    Rule("GET", "/db-configs", url("/db-configs"), page(SIGNED)),
    Rule(
        "POST",
        "/db-configs",
        form("/db-configs", name="form-cfg", db_type="mongodb"),
        page(("admin",), 303, 403),
    ),
    Rule(
        "POST",
        "/db-configs/{config_id}/activate",
        form("/db-configs/{cfg}/activate"),
        page(("admin",), 303, 403),
    ),
    # the user's own API keys
    Rule("GET", "/api-keys", url("/api-keys"), page(SIGNED)),
    Rule(
        "POST",
        "/api-keys",
        form("/api-keys", scope="ingest", project=lambda w, r: w.pa),
        page(A_MEMBERS, 201, 422),
    ),
    Rule("POST", "/api-keys/{key_id}/revoke", form("/api-keys/{key}/revoke"), page(("member_a",), 303, 404)),
    # runs: the user's projects only; another project's run is the unknown run's 404
    Rule("GET", "/runs", url("/runs"), page(SIGNED)),
    Rule("GET", "/runs/overview", url("/runs/overview"), page(SIGNED)),
    Rule("GET", "/runs/export.{fmt}", url("/runs/export.csv"), page(SIGNED)),
    Rule("GET", "/run/{run_id:path}", url("/run/run-aaa"), page(A_MEMBERS)),
    Rule("GET", "/run/{run_id:path}", url("/run/run-bbb"), page(("member_b",))),
    Rule("GET", "/run/{run_id:path}", url("/run/run-aaa?project={pa}"), page(A_MEMBERS)),
    # prompts, skills, reviews: members (then prompt-api decides); other projects are the unknown one's 404
    Rule("GET", "/projects", url("/projects"), page(SIGNED)),
    Rule("GET", "/projects/{project_id}", url("/projects/{pa}"), page(A_MEMBERS)),
    Rule("GET", "/projects/{project_id}", url("/projects/{pb}"), page(("member_b",))),
    Rule(
        "GET", "/projects/{project_id}/prompts/{name}", url("/projects/{pa}/prompts/greet"), page(A_MEMBERS)
    ),
    Rule(
        "GET",
        "/projects/{project_id}/prompts/{name}",
        url("/projects/{pb}/prompts/greet"),
        page(("member_b",)),
    ),
    Rule(
        "GET",
        "/projects/{project_id}/skills/{name}",
        url("/projects/{pa}/skills/refund-policy"),
        page(A_MEMBERS),
    ),
    Rule("GET", "/projects/{project_id}/reviews", url("/projects/{pa}/reviews"), page(A_MEMBERS)),
    Rule(
        "POST",
        "/projects/{project_id}/reviews/{proposal_id}/{verdict}",
        form("/projects/{pa}/reviews/{p}/approve", comment=""),
        {**page(("approver_a",), 303), "member_a": 403},  # a member without the tag: prompt-api's 403
    ),
    Rule(
        "POST",
        "/projects/{project_id}/skill-reviews/{proposal_id}/{verdict}",
        form("/projects/{pa}/skill-reviews/{sp}/reject", comment="no"),
        {**page(("approver_a",), 303), "member_a": 403},
    ),
    Rule(
        "POST",
        "/projects/{project_id}/prompts/{name}/rollback",
        form("/projects/{pa}/prompts/greet/rollback", version="1"),
        {**page(("approver_a",), 303), "member_a": 403},  # Manual review: publishing needs the tag
    ),
]


# guardrail policies (issue 31): as prompts, members read, prompt-api decides every write
def _policy_decision(w: World, role: str) -> dict[str, Any]:
    probe = form("/projects/{pa}/policy-reviews/X/reject", comment="not now")(w, role)
    return {**probe, "url": probe["url"].replace("/X/", f"/{w.extra['policy_proposal']}/")}


RULES += [
    Rule("GET", "/projects/{project_id}/policies", url("/projects/{pa}/policies"), page(A_MEMBERS)),
    Rule("GET", "/projects/{project_id}/policies", url("/projects/{pb}/policies"), page(("member_b",))),
    Rule(
        "GET", "/projects/{project_id}/policies/{name}", url("/projects/{pa}/policies/guard"), page(A_MEMBERS)
    ),
    Rule(
        "GET", "/projects/{project_id}/policy-reviews", url("/projects/{pa}/policy-reviews"), page(A_MEMBERS)
    ),
    Rule(
        "POST",
        "/projects/{project_id}/policies/{name}/publish",
        form(
            "/projects/{pa}/policies/guard/publish",
            yaml="guardrails:\n  checks:\n    pii:\n      default_action: block\n",
        ),
        {**page(("approver_a",), 303), "member_a": 403},  # Manual review: publishing needs the tag
    ),
    Rule(
        "POST",
        "/projects/{project_id}/policies/{name}/rollback",
        form("/projects/{pa}/policies/guard/rollback", version="1"),
        {**page(("approver_a",), 303), "member_a": 403},  # Manual review: publishing needs the tag
    ),
    Rule(
        "POST",
        "/projects/{project_id}/policy-reviews/{proposal_id}/{verdict}",
        _policy_decision,
        {**page(("approver_a",), 303), "member_a": 403},
    ),
]


def test_every_route_of_the_app_has_a_rule(settings_for, tmp_path):
    app = create_app(settings_for(f"sqlite+aiosqlite:///{tmp_path}/x.db", "nats://127.0.0.1:1"))
    routes = routes_of(app)
    ruled = {(r.method, r.template) for r in RULES}
    assert routes - ruled == set(), "routes without a rule in the tenancy matrix (docs/permissions.md)"
    assert ruled - routes == set(), "rules for routes the app does not have"


def _matches(answer: httpx.Response, want: int | str) -> bool:
    if want == LOGIN:
        return answer.status_code == 303 and answer.headers["location"].startswith("/login")
    if want == 303:
        return answer.status_code == 303 and not answer.headers["location"].startswith("/login")
    return answer.status_code == want


async def test_every_route_answers_each_role_as_the_permission_model_says(world):
    wrong = []
    for rule in RULES:
        for role in ROLES:
            kwargs = rule.probe(world, role)
            answer = await world.clients[role].request(rule.method, follow_redirects=False, **kwargs)
            want = rule.expect[role]
            if not _matches(answer, want):
                got = f"{answer.status_code} {answer.headers.get('location', '')}".strip()
                wrong.append(f"{rule.method} {kwargs['url']} as {role}: want {want}, got {got}")
    assert wrong == [], "\n".join(wrong)


async def test_runs_lists_exports_and_charts_hold_only_the_users_projects(world):
    a, b = world.clients["member_a"], world.clients["member_b"]
    assert "/run/run-aaa" in (await a.get("/runs")).text and "/run/run-bbb" not in (await a.get("/runs")).text
    assert "/run/run-bbb" in (await b.get("/runs")).text and "/run/run-aaa" not in (await b.get("/runs")).text
    # a filter naming another organisation's project finds nothing (it is not an error either)
    foreign = await b.get("/runs", params={"project": world.pa})
    assert foreign.status_code == 200 and "/run/run-aaa" not in foreign.text
    exported = json.loads((await b.get("/runs/export.json", params={"project": world.pa})).text)
    assert exported["events"] == []
    mine = json.loads((await b.get("/runs/export.json")).text)["events"]
    assert {e["project_id"] for e in mine} == {world.pb}
    csv = (await a.get("/runs/export.csv")).text
    assert "run-aaa-1" in csv and "run-bbb-1" not in csv and "apikey:" not in csv
    assert "agent-run-bbb" not in (await a.get("/runs/overview")).text
    # the platform administrator is a member of nothing: no project's runs, only the unowned audit record
    admin = json.loads((await world.clients["admin"].get("/runs/export.json")).text)["events"]
    assert [e["run_id"] for e in admin] == ["apikey:k0000000000"]
    assert json.loads((await world.clients["outsider"].get("/runs/export.json")).text)["events"] == []


async def test_another_projects_run_is_exactly_the_unknown_runs_404(world):
    b = world.clients["member_b"]
    foreign, unknown = await b.get("/run/run-aaa"), await b.get("/run/run-zzz")
    assert foreign.status_code == unknown.status_code == 404
    assert foreign.text.replace("run-aaa", "X") == unknown.text.replace("run-zzz", "X")
    drop = {"date"}
    assert {k: v for k, v in foreign.headers.items() if k not in drop} == {
        k: v for k, v in unknown.headers.items() if k not in drop
    }
    named = await b.get("/run/run-aaa", params={"project": world.pa})
    assert named.status_code == 404 and named.text.replace("run-aaa", "X") == unknown.text.replace(
        "run-zzz", "X"
    )


async def test_platform_settings_changes_are_audited_with_the_actor(world):
    admin, member = world.clients["admin"], world.clients["member_a"]
    token = world.tokens["admin"]
    created = await admin.post(
        "/api/platform/db-configs", json={"name": "eu", "db_type": "mongodb"}, headers={"X-CSRF-Token": token}
    )
    assert created.status_code == 201
    refused = await member.post(
        f"/api/platform/db-configs/{created.json()['id']}/activate",
        headers={"X-CSRF-Token": world.tokens["member_a"]},
    )
    assert refused.status_code == 403
    records = (await admin.get("/api/platform/audit")).json()["records"]
    assert records[0]["action"] == "dbconfig.created" and records[0]["target"] == created.json()["id"]
    assert records[0]["actor"]["email"] == world.extra["emails"]["admin"]
    assert not any(r["action"] == "dbconfig.activated" for r in records)  # the refused one left nothing
    page = await admin.get("/db-configs")
    assert re.search(r'id="platform-audit"', page.text) and world.extra["emails"]["admin"] in page.text
    assert 'id="platform-audit"' not in (await member.get("/db-configs")).text
