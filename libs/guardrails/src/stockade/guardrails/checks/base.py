"""The one protocol every content check implements, and the context a check runs in."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from stockade.guardrails.checks.config import Stage
from stockade.guardrails.events import EventRecorder, GuardrailEvent, NullRecorder
from stockade.guardrails.verdict import CheckResult


@dataclass(frozen=True)
class CheckContext:
    """What a check knows about the call besides the text."""

    stage: Stage
    session_id: str | None = None
    source: str | None = None
    """Where context-stage text came from, e.g. ``tool:search_web``, ``document``, ``email``, ``web``."""
    metadata: dict[str, Any] = field(default_factory=dict)
    recorder: EventRecorder = field(default_factory=NullRecorder)

    @property
    def run_id(self) -> str | None:
        run_id = self.metadata.get("run_id")
        return run_id if isinstance(run_id, str) else None

    def record(self, event: GuardrailEvent) -> None:
        self.recorder.record(event)


@runtime_checkable
class ContentCheck(Protocol):
    """A content check: a name, the stages it runs on, and an async ``run``.

    ``run`` returns a :class:`CheckResult` (a decision is a value); it raises only when it could not run at
    all (service down, model missing), which the system turns into a fail-open or fail-closed result.
    CPU-bound work belongs in a worker thread (``asyncio.to_thread``) so checks run concurrently.
    """

    name: str
    stages: frozenset[Stage]

    async def run(self, text: str, ctx: CheckContext) -> CheckResult: ...


@runtime_checkable
class WarmsUp(Protocol):
    """A check with a slow first step (model load, connection pool): ``warmup()`` runs once before its first
    run, outside the per-run timeout (``GuardrailSystem.warmup()`` runs it eagerly)."""

    async def warmup(self) -> None: ...


@runtime_checkable
class Closes(Protocol):
    """A check that holds resources (pooled connections): ``GuardrailSystem.aclose()`` calls ``aclose()``."""

    async def aclose(self) -> None: ...


@runtime_checkable
class ScalesTimeout(Protocol):
    """A check whose work grows with the text (the sensitive-data model reads every window): the runner asks
    ``timeout_for(text, base_s)`` for the time it may take on ``text`` instead of the fixed ``timeout_s``."""

    def timeout_for(self, text: str, base_s: float) -> float: ...


@runtime_checkable
class SpendsTokens(Protocol):
    """A check that calls a model itself (the classification judge): the system binds ``charge(run_id,
    tokens)`` so that those tokens count in the run's token budget."""

    def bind_token_budget(self, charge: Callable[[str | None, int], None]) -> None: ...


def starts_inline(check: ContentCheck) -> bool:
    """Whether the runner starts ``check`` before the others: a check sets the class attribute
    ``starts_inline = True`` when its ``run`` begins with a short synchronous step on the event loop (the
    classification prefilter) that should not wait behind the other checks' worker threads."""
    return getattr(check, "starts_inline", False) is True
