"""What end_run() returns: a flush outcome is a value, never an exception (the agent keeps running)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class FlushStatus(StrEnum):
    SENT = "sent"  # every buffered event is queued by the backend
    EMPTY = "empty"  # nothing to send
    DISABLED = "disabled"  # guardrails.storage.enabled is false: nothing was buffered
    FAILED = "failed"  # the backend could not be reached or answered 5xx: events kept for a retry
    REJECTED = "rejected"  # the backend refused the data (4xx other than 409): retrying cannot help


@dataclass(frozen=True)
class FlushResult:
    """Outcome of end_run() / flush_pending() for one run."""

    run_id: str
    status: FlushStatus
    sent: int = 0
    pending: int = 0
    rejected: int = 0
    dropped: int = 0
    db_type: str | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        """True when nothing is left to do for this run (sent, empty or disabled)."""
        return self.status in (FlushStatus.SENT, FlushStatus.EMPTY, FlushStatus.DISABLED)

    @classmethod
    def of(cls, run_id: str, outcome: SendOutcome, total: int, *, dropped: int = 0) -> FlushResult:
        """The result of sending ``total`` events with ``outcome``: the unsent ones are pending when the
        failure is retryable, else refused."""
        if outcome.ok:
            return cls(run_id, FlushStatus.SENT, sent=outcome.sent, dropped=dropped, db_type=outcome.db_type)
        unsent = total - outcome.sent
        return cls(
            run_id,
            FlushStatus.FAILED if outcome.retryable else FlushStatus.REJECTED,
            sent=outcome.sent,
            pending=unsent - outcome.rejected if outcome.retryable else 0,
            rejected=outcome.rejected if outcome.retryable else unsent,
            dropped=dropped,
            db_type=outcome.db_type,
            error=outcome.error,
        )


@dataclass(frozen=True)
class SendOutcome:
    """Outcome of one BackendGuardrailSink.send()."""

    sent: int
    db_type: str | None = None
    error: str | None = None
    retryable: bool = True
    remaining: int = 0
    rejected: int = 0  # events the backend refused one by one (413 alone); the others were sent

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def done(self) -> int:
        """Events sent or refused for good: the first ``done`` events of the request need no resend."""
        return self.sent + self.rejected
