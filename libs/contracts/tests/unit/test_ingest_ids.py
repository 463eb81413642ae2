"""Client-supplied ids and names in a guardrail batch refuse control characters (review N10)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from stockade.contracts.ingest_wire import GuardrailBatch


def batch(run: dict[str, Any] | None = None, **event: Any) -> dict[str, Any]:
    wire = {"event_id": "e-1", "kind": "check", "name": "pii", "occurred_at": "2026-11-28T12:00:00Z", **event}
    return {"run": {"run_id": "run-1", **(run or {})}, "events": [wire]}


def test_a_clean_batch_passes() -> None:
    body = batch({"project_id": "p", "labels": {"team": "risk"}}, session_id="user@x/1 a", run_id="run-2")
    assert GuardrailBatch.model_validate(body).events[0].run_id == "run-2"


@pytest.mark.parametrize("bad", ["\x1b[31mred", "a\x00b", "line\nbreak", "del\x7f", "c1\x9b2J"])
@pytest.mark.parametrize(
    "where",
    [
        "session_id",
        "run_id",
        "name",
        "action",
        "project_id",
        "agent_id",
        "prompt_name",
        "correlation_id",
        "label",
    ],
)
def test_control_characters_are_refused_everywhere(bad: str, where: str) -> None:
    if where == "label":
        body = batch({"labels": {"k": bad}})
    elif where in ("project_id", "agent_id", "prompt_name", "correlation_id"):
        body = batch({where: bad})
    else:
        body = batch(**{where: bad})
    with pytest.raises(ValidationError):
        GuardrailBatch.model_validate(body)


def test_the_platforms_audit_kind_is_refused_from_clients() -> None:
    with pytest.raises(ValidationError, match="platform only"):
        GuardrailBatch.model_validate(batch(kind="audit"))
    assert GuardrailBatch.model_validate(batch(kind="trust")).events[0].kind == "trust"  # the library's own
