"""guardrails.checks configuration: defaults and descriptions everywhere, validation names the bad key."""

from __future__ import annotations

import typing

import pytest
from pydantic import BaseModel

from stockade.guardrails import ConfigError, GuardrailsConfig
from stockade.guardrails.checks import config as checks_config


def models() -> list[type[BaseModel]]:
    """Every settings model reachable from ``guardrails.checks``, whichever module defines it."""
    found: list[type[BaseModel]] = []

    def visit(annotation: object) -> None:
        if isinstance(annotation, type) and issubclass(annotation, BaseModel) and annotation not in found:
            found.append(annotation)
            for field in annotation.model_fields.values():
                visit(field.annotation)
        for arg in typing.get_args(annotation):
            visit(arg)

    visit(checks_config.ContentChecksConfig)
    return found


@pytest.mark.parametrize("model", models(), ids=lambda m: m.__name__)
def test_every_field_has_a_default_and_a_description(model: type[BaseModel]) -> None:
    if model.__name__.startswith("_"):
        return
    for name, field in model.model_fields.items():
        assert field.description, f"{model.__name__}.{name} has no description"
        assert not field.is_required(), f"{model.__name__}.{name} has no default"


def test_yaml_configures_nested_check_settings() -> None:
    cfg = GuardrailsConfig.from_yaml(
        """
guardrails:
  checks:
    pii:
      entity_policies:
        US_SSN: {action: block, threshold: 0.3}
    toxicity: {enabled: true, url: "http://tox:9000/classify", label_map: {LABEL_1: toxic}}
    classification: {encoder_type: openai, openai: {base_url: "http://emb:8000/v1", model: e5}}
"""
    )
    checks = cfg.guardrails.checks
    assert checks.pii.policy("US_SSN").action == "block" and checks.pii.policy("US_SSN").threshold == 0.3
    assert checks.pii.policy("PERSON").action == "mask"
    assert checks.toxicity.label_map == {"LABEL_1": "toxic"}
    assert checks.classification.openai.model == "e5"


@pytest.mark.parametrize(
    ("data", "key"),
    [
        (
            {"pii": {"entity_policies": {"US_SSN": {"threshold": 2}}}},
            "guardrails.checks.pii.entity_policies.US_SSN.threshold",
        ),
        ({"toxicity": {"toxic_action": "mask"}}, "guardrails.checks.toxicity.toxic_action"),
        ({"classification": {"encoder_type": "bert"}}, "guardrails.checks.classification.encoder_type"),
        (
            {"exfiltration": {"patterns": {"hex_min_length": 2}}},
            "guardrails.checks.exfiltration.patterns.hex_min_length",
        ),
        ({"pii": {"hash_salt": "short"}}, "guardrails.checks.pii.hash_salt"),
        (
            {"exfiltration": {"secrets": {"disabled_rules": ["uuid", "uiud"]}}},
            "guardrails.checks.exfiltration.secrets.disabled_rules",
        ),
        (
            {"exfiltration": {"secrets": {"allow_values": ["sk-test-(unclosed"]}}},
            "guardrails.checks.exfiltration.secrets.allow_values",
        ),
        ({"unknown_check": {}}, "guardrails.checks.unknown_check"),
    ],
)
def test_invalid_values_name_the_dotted_key(data: dict, key: str) -> None:
    with pytest.raises(ConfigError) as exc:
        GuardrailsConfig.from_dict({"guardrails": {"checks": data}})
    assert key in str(exc.value)
