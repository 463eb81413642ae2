import pytest
from pydantic_settings import SettingsConfigDict

from stockade.runtime.db import is_sqlite, normalise_url
from stockade.runtime.settings import DEFAULT_SQLITE_URL, ServiceSettings


class DemoSettings(ServiceSettings):
    model_config = SettingsConfigDict(env_prefix="DEMO_SVC_", env_nested_delimiter="__", extra="ignore")


def test_defaults_are_the_embedded_stack():
    s = DemoSettings()
    assert s.db.url == DEFAULT_SQLITE_URL
    assert s.nats.url == "nats://127.0.0.1:14222"


def test_nested_env_with_service_prefix(monkeypatch):
    monkeypatch.setenv("DEMO_SVC_DB__URL", "postgresql://u:p@db:5432/x")
    monkeypatch.setenv("DEMO_SVC_NATS__URL", "nats://a:4222, nats://b:4222")
    monkeypatch.setenv("DEMO_SVC_HTTP__PORT", "9001")
    monkeypatch.setenv("OTHER_SVC_HTTP__PORT", "1")  # another service's prefix is ignored
    s = DemoSettings()
    assert s.db.url == "postgresql://u:p@db:5432/x"
    assert s.nats.servers() == ["nats://a:4222", "nats://b:4222"]
    assert s.http.port == 9001


def test_invalid_env_value_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("DEMO_SVC_HTTP__PORT", "not-a-port")
    with pytest.raises(ValueError, match="port"):
        DemoSettings()


def test_nats_password_is_not_in_repr(monkeypatch):
    monkeypatch.setenv("DEMO_SVC_NATS__PASSWORD", "hunter2-secret")
    s = DemoSettings()
    assert "hunter2-secret" not in repr(s)
    assert s.nats.password is not None and s.nats.password.get_secret_value() == "hunter2-secret"


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("postgresql://u:p@h:5432/d", "postgresql+asyncpg://u:p@h:5432/d"),
        ("postgres://u@h/d", "postgresql+asyncpg://u@h/d"),
        ("postgresql+asyncpg://u@h/d", "postgresql+asyncpg://u@h/d"),
        ("sqlite:///./x.db", "sqlite+aiosqlite:///./x.db"),
        ("sqlite+aiosqlite:///:memory:", "sqlite+aiosqlite:///:memory:"),
    ],
)
def test_urls_get_their_async_driver(given, expected):
    assert normalise_url(given) == expected


def test_is_sqlite():
    assert is_sqlite("sqlite:///x.db") and not is_sqlite("postgresql://h/d")
