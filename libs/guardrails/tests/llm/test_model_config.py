"""ModelConfig: providers, validation naming the bad key, secrets only from the environment or a file."""

from __future__ import annotations

from pathlib import Path

import pytest

from stockade.guardrails import ConfigError, load_config
from stockade.guardrails.llm.config import ModelConfig

SECRET = "sk-live-abcdef0123456789"


def test_models_from_yaml_file(tmp_path: Path) -> None:
    path = tmp_path / "guardrails.yaml"
    path.write_text(
        """
models:
  - {name: main, provider: anthropic, model: claude-x, input_price_per_mtok: "3", output_price_per_mtok: "15"}
  - {provider: bedrock, model: amazon.nova-lite-v1:0, region: eu-west-1}
  - {provider: azure_openai, model: gpt4o-deploy, base_url: "https://x.openai.azure.com", api_version: "2024-10-21"}
""",
        encoding="utf-8",
    )
    cfg = load_config(path)
    assert [m.provider for m in cfg.models] == ["anthropic", "bedrock", "azure_openai"]
    assert str(cfg.models[0].output_price_per_mtok) == "15"


@pytest.mark.parametrize(
    ("model", "message"),
    [
        ({"provider": "mistral", "model": "m"}, r"models\.0\.provider"),
        ({"provider": "openai"}, r"models\.0\.model"),
        (
            {"provider": "openai", "model": "m", "input_price_per_mtok": -1},
            r"models\.0\.input_price_per_mtok",
        ),
        ({"provider": "azure_openai", "model": "d"}, "azure_openai needs base_url"),
        ({"provider": "openai", "model": "m", "api_key": SECRET}, "'api_key' is not accepted"),
    ],
)
def test_invalid_models_name_the_key(model: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        load_config({"models": [model]})
    assert SECRET not in str(info.value)


def test_key_from_environment_is_never_echoed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_OPENAI_KEY", SECRET)
    cfg = ModelConfig(provider="openai", model="gpt-4o", api_key_env="MY_OPENAI_KEY")
    key = cfg.resolve_api_key()
    assert key is not None and key.get_secret_value() == SECRET
    assert SECRET not in repr(key) and SECRET not in str(key) and SECRET not in repr(cfg)


def test_missing_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY is not set"):
        ModelConfig(provider="anthropic", model="c").resolve_api_key()


def test_key_from_secrets_file(tmp_path: Path) -> None:
    secret_file = tmp_path / "openai.key"
    secret_file.write_text(SECRET + "\n", encoding="utf-8")
    key = ModelConfig(provider="openai", model="m", api_key_file=secret_file).resolve_api_key()
    assert key is not None and key.get_secret_value() == SECRET
    with pytest.raises(ConfigError, match="cannot read"):
        ModelConfig(provider="openai", model="m", api_key_file=tmp_path / "missing").resolve_api_key()


def test_bedrock_uses_the_aws_credential_chain() -> None:
    assert ModelConfig(provider="bedrock", model="amazon.nova-lite-v1:0").resolve_api_key() is None
