"""The committed AsyncAPI document is the one stockade.contracts generates, and it describes every subject."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from stockade.contracts import asyncapi, subjects

COMMITTED = Path(__file__).resolve().parents[2] / "asyncapi.json"
REGENERATE = ".venv/bin/python -m stockade.contracts.asyncapi libs/contracts/asyncapi.json"


def test_committed_document_matches_the_contracts() -> None:
    assert COMMITTED.read_text(encoding="utf-8") == asyncapi.render(), (
        f"libs/contracts/asyncapi.json is out of date with stockade.contracts: regenerate it with `{REGENERATE}` "
        "and commit the result"
    )


def test_every_subject_has_a_channel_with_a_payload() -> None:
    document = asyncapi.document()
    addresses = {channel["address"] for channel in document["channels"].values()}
    events = set(subjects.EVENTS) - {subjects.PROMPT_PUBLISHED, subjects.POLICY_PUBLISHED}
    assert events | set(subjects.COMMANDS) <= addresses
    assert {"trust.submit.{receiver}", "agent.{receiver}.inbox", "agent.{sender}.reply.{token}"} <= addresses
    assert "prompt.published.v1.{project_id}" in addresses  # one subject per project
    assert "policy.published.v1.{project_id}" in addresses
    assert all("payload" in message for message in document["components"]["messages"].values())


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        return (
            [node["$ref"]]
            if isinstance(node.get("$ref"), str)
            else [r for v in node.values() for r in _refs(v)]
        )
    if isinstance(node, list):
        return [r for v in node for r in _refs(v)]
    return []


def test_every_reference_resolves() -> None:
    document = json.loads(asyncapi.render())
    for ref in _refs(document):
        target: Any = document
        for part in ref.removeprefix("#/").split("/"):
            target = target[part]  # KeyError names the broken reference
        assert isinstance(target, dict), ref
