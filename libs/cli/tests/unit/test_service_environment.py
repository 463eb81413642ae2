"""What ``stockade up`` hands each HTTP service: it serves plain http on 127.0.0.1, so model-api's session
cookie goes without Secure there (the service's own default, for every other deployment, is Secure)."""

from stockade.cli.stack import StackConfig, http_service_env
from stockade.model_api.settings import ModelApiSettings


def test_stockade_up_turns_the_secure_cookie_off_for_its_plain_http_console(tmp_path, monkeypatch):
    monkeypatch.delenv("MODEL_API_SESSION__SECURE", raising=False)
    cfg = StackConfig(state_dir=tmp_path, model_port=18102)
    env = http_service_env(cfg, "model-api")
    assert env["MODEL_API_SESSION__SECURE"] == "never" and env["MODEL_API_HTTP__PORT"] == "18102"
    for name, value in env.items():
        if name.startswith("MODEL_API_"):
            monkeypatch.setenv(name, value)
    assert ModelApiSettings().session.secure == "never"
    monkeypatch.delenv("MODEL_API_SESSION__SECURE")
    assert ModelApiSettings().session.secure == "always"  # the service's default outside stockade up
    assert "MODEL_API_SESSION__SECURE" not in http_service_env(cfg, "prompt-api")


def test_an_explicit_setting_wins(tmp_path, monkeypatch):
    monkeypatch.setenv("MODEL_API_SESSION__SECURE", "always")
    assert (
        http_service_env(StackConfig(state_dir=tmp_path), "model-api")["MODEL_API_SESSION__SECURE"]
        == "always"
    )
