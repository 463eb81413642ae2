"""The small pieces services share through runtime: ``python -m`` entry, MongoDB collection opener, DB deps."""

import subprocess
import sys

import pytest
from fastapi import FastAPI

from stockade.runtime import entrypoint
from stockade.runtime.settings import ServiceSettings


def test_mongo_module_imports_without_pymongo():
    code = "import sys, stockade.runtime.mongo; print('pymongo' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


async def test_open_collection_names_the_urls_database_and_sets_every_timeout():
    pytest.importorskip("pymongo")
    from stockade.runtime.mongo import open_collection

    opened = open_collection("mongodb://127.0.0.1:1/events_db", "guardrail_events", timeout_s=2.5)
    named = open_collection("mongodb://127.0.0.1:1", "runs", timeout_s=1)
    try:
        assert opened.collection.full_name == "events_db.guardrail_events"
        assert named.collection.full_name == "stockade.runs"
        options = opened.client.options
        assert options.server_selection_timeout == 2.5
        assert options.pool_options.connect_timeout == 2.5
        assert options.timeout == 2.5
        assert options.codec_options.tz_aware is True
    finally:
        await opened.client.close()
        await named.client.close()


def test_run_service_configures_logging_then_serves_the_app(monkeypatch):
    calls: list[tuple[object, ...]] = []
    app = FastAPI()

    class Settings(ServiceSettings):
        service_name: str = "svc-under-test"

    monkeypatch.setattr(entrypoint, "configure_logging", lambda *a: calls.append(("log", *a)))
    monkeypatch.setattr(entrypoint, "serve", lambda a, s: calls.append(("serve", a, s.service_name)))

    def create_app(settings: Settings) -> FastAPI:
        calls.append(("create", settings.service_name))
        return app

    entrypoint.run_service(Settings, create_app)
    level = Settings().log.level
    json_format = Settings().log.json_format
    assert calls == [
        ("log", "svc-under-test", level, json_format),
        ("create", "svc-under-test"),
        ("serve", app, "svc-under-test"),
    ]
