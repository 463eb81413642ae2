"""guardrail-ingest boots from settings and answers health over HTTP (real socket) and over NATS."""

import json

import httpx
import pytest

from stockade.contracts import subjects
from stockade.guardrail_ingest.main import create_app
from stockade.guardrail_ingest.settings import GuardrailIngestSettings
from stockade.runtime.settings import DatabaseSettings, NatsSettings
from stockade.testing.asgi import serving

pytestmark = [pytest.mark.nats, pytest.mark.postgres]


def test_settings_from_environment(monkeypatch):
    prefix = GuardrailIngestSettings.model_config["env_prefix"]
    monkeypatch.setenv(f"{prefix}HTTP__PORT", "9999")
    monkeypatch.setenv(f"{prefix}NATS__URL", "nats://example:4222")
    settings = GuardrailIngestSettings()
    assert settings.http.port == 9999 and settings.nats.url == "nats://example:4222"
    assert GuardrailIngestSettings().service_name == "guardrail-ingest"


def test_app_factory_connects_to_nothing():
    create_app(
        GuardrailIngestSettings(
            nats=NatsSettings(url="nats://127.0.0.1:1"), db=DatabaseSettings(url="sqlite:///:memory:")
        )
    )


async def test_health_over_http_and_nats(nats_url, nats_client, tmp_path, monkeypatch):
    # It keeps no relational data: no database engine, no file written (a read-only /app in its container).
    monkeypatch.chdir(tmp_path)
    settings = GuardrailIngestSettings(nats=NatsSettings(url=nats_url))
    async with serving(create_app(settings)) as base_url, httpx.AsyncClient(base_url=base_url) as client:
        assert (await client.get("/healthz")).json() == {"status": "ok", "service": "guardrail-ingest"}
        ready = await client.get("/readyz")
        assert ready.status_code == 200, ready.text
        assert ready.json()["checks"] == {"nats": "ok"}
        reply = await nats_client.request(subjects.GUARDRAIL_HEALTH, b"{}", timeout=3)
        assert json.loads(reply.data) == {"status": "ok", "service": "guardrail-ingest"}
    assert list(tmp_path.iterdir()) == []
