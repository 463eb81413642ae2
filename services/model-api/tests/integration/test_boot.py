"""model-api boots from settings and answers health over HTTP (real socket) and over NATS."""

import json

import httpx
import pytest

from stockade.contracts import subjects
from stockade.model_api.main import create_app
from stockade.model_api.settings import ModelApiSettings
from stockade.runtime.settings import DatabaseSettings, NatsSettings
from stockade.testing.asgi import serving

pytestmark = [pytest.mark.nats, pytest.mark.postgres]


def test_settings_from_environment(monkeypatch):
    prefix = ModelApiSettings.model_config["env_prefix"]
    monkeypatch.setenv(f"{prefix}HTTP__PORT", "9999")
    monkeypatch.setenv(f"{prefix}NATS__URL", "nats://example:4222")
    settings = ModelApiSettings()
    assert settings.http.port == 9999 and settings.nats.url == "nats://example:4222"
    assert ModelApiSettings().service_name == "model-api"


def test_app_factory_connects_to_nothing():
    create_app(
        ModelApiSettings(
            nats=NatsSettings(url="nats://127.0.0.1:1"), db=DatabaseSettings(url="sqlite:///:memory:")
        )
    )


async def test_health_over_http_and_nats(nats_url, nats_client, postgres_database):
    settings = ModelApiSettings(nats=NatsSettings(url=nats_url), db=DatabaseSettings(url=postgres_database))
    async with serving(create_app(settings)) as base_url, httpx.AsyncClient(base_url=base_url) as client:
        assert (await client.get("/healthz")).json() == {"status": "ok", "service": "model-api"}
        ready = await client.get("/readyz")
        assert ready.status_code == 200, ready.text
        assert ready.json()["checks"] == {"database": "ok", "nats": "ok"}
        reply = await nats_client.request(subjects.MODEL_HEALTH, b"{}", timeout=3)
        assert json.loads(reply.data) == {"status": "ok", "service": "model-api"}
