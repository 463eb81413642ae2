"""One run's buffer in the storage hook (its links, its events not yet sent, how many were dropped), and what
else follows the run lifecycle (:class:`RunListener`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from stockade.contracts.ingest_wire import RunInfo
from stockade.contracts.policy import PolicyRef
from stockade.guardrails.events import GuardrailEvent
from stockade.guardrails.storage.context import RunLinks


@dataclass
class BufferedRun:
    """An open run, or a closed one whose flush failed (its unsent events wait for a retry)."""

    run_id: str
    links: RunLinks
    started_at: datetime
    events: list[GuardrailEvent] = field(default_factory=list)
    dropped: int = 0
    ended_at: datetime | None = None

    def info(self) -> RunInfo:
        return RunInfo(
            run_id=self.run_id,
            **self.links.as_fields(),
            started_at=self.started_at,
            ended_at=self.ended_at,
            dropped_events=self.dropped,
        )


def stamped(event: GuardrailEvent, run_id: str, policy: PolicyRef | None) -> GuardrailEvent:
    """``event`` as its run keeps it: with the run's id and the policy version that made it, where it has none."""
    update: dict[str, str] = {}
    if event.run_id is None:
        update["run_id"] = run_id
    if policy is not None and event.policy_name is None:
        update.update(policy_name=policy.name, policy_version=str(policy.version))
    return event.model_copy(update=update) if update else event


class RunListener(Protocol):
    """Follows the run lifecycle of a storage hook (the token budget's per-run totals do)."""

    def run_began(self, run_id: str) -> None: ...

    def run_ended(self, run_id: str) -> None: ...
