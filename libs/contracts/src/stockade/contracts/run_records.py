"""The run store's records as the console renders them: a run's events, a whole run, the overview's figures.

Part of the read contract of :mod:`stockade.contracts.run_store` (the commands and replies are there); the
properties a page shows (an event's stage, duration and score, a run's first event) are computed here, once.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

_POLICY_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
"""A policy name as prompt-api takes it."""


class ContractModel(BaseModel):
    """A frozen wire model that refuses unknown fields (every run-store command, reply and record)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    def to_bytes(self) -> bytes:
        return self.model_dump_json().encode()


class RunEvent(ContractModel):
    """One stored event, as stored (the library never puts raw values in a payload)."""

    event_id: str
    kind: str
    name: str
    occurred_at: AwareDatetime
    session_id: str | None
    action: str | None
    payload: dict[str, Any]
    policy_name: str | None = None
    """The platform guardrail policy that made the event; None for events of a local configuration and for
    events stored before events carried it."""
    policy_version: str | None = None

    @property
    def policy(self) -> str | None:
        """``name v<version>`` as a page shows it, or None."""
        if self.policy_name is None:
            return None
        return f"{self.policy_name} v{self.policy_version}" if self.policy_version else self.policy_name

    @property
    def policy_path(self) -> str | None:
        """The console's path of the policy version (``<name>?from=<v-1>&to=<v>``), or None when the stored name
        or version could not be prompt-api's (an agent sends them: never turned into a link unchecked)."""
        name, version = self.policy_name or "", self.policy_version or ""
        if not _POLICY_NAME.fullmatch(name):
            return None
        if not version.isdigit() or not 0 < int(version) < 10**9:
            return name
        return f"{name}?from={max(int(version) - 1, 1)}&to={int(version)}"

    @property
    def stage(self) -> str | None:
        value = self.payload.get("stage")
        return str(value) if value is not None else None

    @property
    def duration_ms(self) -> float | None:
        return _number(self.payload.get("duration_ms"))

    @property
    def score(self) -> float | None:
        return _number(self.payload.get("score"))

    @property
    def finding_types(self) -> dict[str, int]:
        value = self.payload.get("finding_types")
        if isinstance(value, dict):
            return {str(k): int(v) for k, v in value.items() if isinstance(v, int | float)}
        entity = self.payload.get("entity_type")  # a pii_audit entry names one finding
        return {str(entity): 1} if entity else {}

    def details(self) -> list[tuple[str, str]]:
        """The payload's other fields (reason, layer, error, ...), scalars only, as text."""
        shown = {"stage", "duration_ms", "score", "finding_types", "entity_type"}
        return [
            (k, str(v))
            for k, v in sorted(self.payload.items())
            if k not in shown and v is not None and v != "" and isinstance(v, str | int | float | bool)
        ]


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


class RunDetail(ContractModel):
    project_id: str
    run_id: str
    agent_id: str | None
    environment: str | None
    prompt_name: str | None
    prompt_version: str | None
    correlation_id: str | None
    labels: dict[str, str]
    events: list[RunEvent]

    @property
    def first_at(self) -> datetime:
        return self.events[0].occurred_at

    def offset_ms(self, event: RunEvent) -> float:
        return (event.occurred_at - self.first_at).total_seconds() * 1000

    @property
    def policies(self) -> list[str]:
        """The platform policy versions that made the run's events, in the order they first appear."""
        return list(dict.fromkeys(e.policy for e in self.events if e.policy is not None))


class Overview(ContractModel):
    bucket_s: int
    buckets: list[AwareDatetime]
    decisions: dict[str, dict[AwareDatetime, tuple[int, int]]] = Field(
        description="check name -> bucket start -> (blocks, masks)"
    )
    top_findings: list[tuple[str, int]]
    latency: list[tuple[str, int, float, float, float]] = Field(
        description="(check name, count, p50, p95, p99), milliseconds"
    )
    trust_rejections: list[tuple[str, int]]
    today: list[tuple[str, int, float]] = Field(
        default_factory=list, description="(label, today, average per day over the 7 days before)"
    )
