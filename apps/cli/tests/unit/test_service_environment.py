"""What ``stockade up`` hands each HTTP service: it serves plain http on 127.0.0.1, so model-api's session
cookie goes without Secure there (the service's own default, for every other deployment, is Secure)."""

from stockade.cli.stack import StackConfig, http_service_env, trust_broker_env
from stockade.model_api.settings import ModelApiSettings
from stockade.trust_broker.settings import TrustBrokerSettings


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


def test_the_console_gets_no_run_store_connection_of_its_own(tmp_path, monkeypatch):
    """guardrail-ingest writes the embedded store and answers the console's reads of it; model-api is told no
    store URL (it reads through guardrail.cmd.read_runs.v2 only)."""
    for var in (
        "GUARDRAIL_INGEST_SINK__CLICKHOUSE_URL",
        "GUARDRAIL_INGEST_SINK__URL",
        "GUARDRAIL_INGEST_SINK__KIND",
    ):
        monkeypatch.delenv(var, raising=False)
    cfg = StackConfig(state_dir=tmp_path)
    assert http_service_env(cfg, "guardrail-ingest")["GUARDRAIL_INGEST_SINK__URL"].startswith("chdb:///")
    assert not [k for k in http_service_env(cfg, "model-api") if k.startswith("MODEL_API_RUNS__")]


def test_the_demo_broker_runs_layer_d_unless_told_otherwise(tmp_path, monkeypatch):
    monkeypatch.delenv("TRUST_BROKER_CONTENT_VALIDATION__ENABLED", raising=False)
    env = trust_broker_env(StackConfig(state_dir=tmp_path))
    for name, value in env.items():
        if name.startswith("TRUST_BROKER_"):
            monkeypatch.setenv(name, value)
    assert TrustBrokerSettings().content_validation.enabled  # spec 4.4: layers A to D
    monkeypatch.setenv("TRUST_BROKER_CONTENT_VALIDATION__ENABLED", "false")
    assert (
        trust_broker_env(StackConfig(state_dir=tmp_path))["TRUST_BROKER_CONTENT_VALIDATION__ENABLED"]
        == "false"
    )
