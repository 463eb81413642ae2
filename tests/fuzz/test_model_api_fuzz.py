"""schemathesis against model-api's JSON API (``/api/platform/*``, spec 4.2): the real app on real PostgreSQL and
NATS, with a signed-in console session (the cookie of a real sign-in through POST /login).

The console's HTML pages are in the same OpenAPI document but are not fuzzed here: they answer with pages and
redirects for browsers, not the JSON contract. Half the generated ``provider``/``model_id`` values of the
delete are replaced by those of a real catalogue entry, and half the ``config_id`` values by a real database
configuration, so requests reach the handlers. Checks: no 5xx, status code documented, content type documented,
body matches the documented schema.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import hypothesis.strategies as st
import pytest
import requests
import schemathesis

from stockade.identity import create_user, grant_platform_admin
from stockade.model_api.main import create_app
from stockade.model_api.settings import ModelApiSettings, SessionSettings
from stockade.runtime.settings import DatabaseSettings, NatsSettings
from stockade.testing.asyncbridge import run_blocking
from stockade.testing.postgres import temporary_database

MAX_EXAMPLES = 25  # per operation, fuzzing phase; the coverage phase adds its own boundary cases
PASSWORD = "correct horse battery staple"


def _openapi() -> dict[str, Any]:
    """The schema the app serves at /openapi.json (built without connecting anywhere)."""
    return create_app(ModelApiSettings(db=DatabaseSettings(url="sqlite+aiosqlite:///:memory:"))).openapi()


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
schema = schemathesis.openapi.from_dict(_openapi(), config=schemathesis.Config.from_dict(CONFIG)).include(
    path_regex=r"^/api/"
)


@dataclass
class World:
    base_url: str
    cookies: dict[str, str]
    model: dict[str, str]  # provider and model_id of a real entry
    config_id: str
    csrf: str = ""  # the session's X-CSRF-Token, sent with every request (JSON writes need it)


WORLD: list[World] = []  # set by the module fixture; read by the hooks while examples are generated


async def _add_user(settings: ModelApiSettings, email: str) -> None:
    from stockade.runtime.db import create_engine, session_factory

    engine = create_engine(settings.db.url)
    try:
        async with session_factory(engine)() as s:
            await create_user(s, email, PASSWORD)
            await grant_platform_admin(s, email)  # database configurations need the role
            await s.commit()
    finally:
        await engine.dispose()


def _signed_in(base_url: str, email: str) -> dict[str, str]:
    with requests.Session() as browser:
        r = browser.post(
            f"{base_url}/login",
            data={"email": email, "password": PASSWORD, "next": "/models"},
            allow_redirects=False,
            timeout=30,
        )
        assert r.status_code == 303, r.text
        return dict(browser.cookies)


ENTRY = {
    "provider": "openai",
    "model": {
        "model_id": "gpt-fuzz",
        "displayName": "GPT Fuzz",
        "modelType": "chat",
        "contextWindow": 8192,
        "inputPricePerMToken": 1.5,
        "outputPricePerMToken": 2,
        "capabilities": [],
    },
}


def _csrf(base_url: str, cookies: dict[str, str]) -> str:
    r = requests.get(f"{base_url}/api/platform/session", cookies=cookies, timeout=30)
    assert r.status_code == 200, r.text
    return str(r.json()["csrfToken"])


def _seed(base_url: str, cookies: dict[str, str], csrf: str) -> tuple[dict[str, str], str]:
    headers = {"X-CSRF-Token": csrf}
    r = requests.post(
        f"{base_url}/api/platform/models", json=ENTRY, cookies=cookies, headers=headers, timeout=30
    )
    assert r.status_code in (200, 201), r.text
    config = {"name": "fuzz-spare", "db_type": "mongodb"}
    r = requests.post(
        f"{base_url}/api/platform/db-configs", json=config, cookies=cookies, headers=headers, timeout=30
    )
    assert r.status_code == 201, r.text
    return {"provider": "openai", "model_id": "gpt-fuzz"}, r.json()["id"]


@pytest.fixture(scope="module")
def world(postgres_url: str, nats_url: str, serve_app) -> Iterator[World]:
    with temporary_database(postgres_url, "fuzz_model_api") as url:
        settings = ModelApiSettings(
            db=DatabaseSettings(url=url),
            nats=NatsSettings(url=nats_url),
            session=SessionSettings(secure="auto"),  # plain http here: a Secure cookie would not come back
        )
        with serve_app(create_app(settings)) as base_url:  # the lifespan migrates the database first
            run_blocking(lambda: _add_user(settings, "fuzzer@example.org"))
            cookies = _signed_in(base_url, "fuzzer@example.org")
            csrf = _csrf(base_url, cookies)
            model, config_id = _seed(base_url, cookies, csrf)
            WORLD.append(World(base_url, cookies, model, config_id, csrf))
            try:
                yield WORLD[-1]
            finally:
                WORLD.clear()


# Each hook offers the real values first: Hypothesis starts from the simplest example (the first element), so
# every operation is certain to get a request that reaches its handler, then draws among real and generated.
@schema.hook
def flatmap_query(ctx, query):
    if not isinstance(query, dict) or not WORLD or "model_id" not in query:
        return st.just(query)
    return st.sampled_from([{**query, **WORLD[-1].model}, query])


@schema.hook
def flatmap_path_parameters(ctx, path_parameters):
    if not isinstance(path_parameters, dict) or not WORLD or "config_id" not in path_parameters:
        return st.just(path_parameters)
    return st.sampled_from([{**path_parameters, "config_id": WORLD[-1].config_id}, path_parameters])


@schema.hook
def flatmap_body(ctx, body):
    if not isinstance(body, dict) or not isinstance(body.get("model"), dict):
        return st.just(body)
    return st.sampled_from([{**body, **ENTRY}, body])


@schema.parametrize()
def test_model_api_conforms_to_its_openapi(case, world: World, http: requests.Session, answers) -> None:
    case.headers = {**(case.headers or {}), "X-CSRF-Token": world.csrf}
    response = case.call_and_validate(base_url=world.base_url, session=http, cookies=world.cookies)
    answers.setdefault(case.operation.label, []).append(response.status_code)


def test_print_answers(answers):
    import collections

    for k, v in answers.items():
        print(k, sorted(collections.Counter(v).items()))
