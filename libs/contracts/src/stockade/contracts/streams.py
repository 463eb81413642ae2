"""Every JetStream stream and key-value bucket Stockade creates: name, subjects, retention and limits.

The specifications are plain data (no NATS client needed); :mod:`stockade.contracts.jetstream` creates them. The
number of copies is not part of a specification: every creator takes it from ``NatsSettings.stream_replicas``
(``STOCKADE_NATS__STREAM_REPLICAS``, 1 on a single server). A service may override a stream's limits or name
from its settings (guardrail-ingest, trust-broker); the defaults are these.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Final, Literal

from stockade.contracts import subjects
from stockade.contracts.limits import BUCKET_MAX_BYTES, STREAM_LIMITS, StreamLimits


@dataclass(frozen=True)
class StreamSpec:
    """A stream: ``retention="workqueue"`` removes a message once acknowledged; ``duplicate_window_s`` 0 takes
    the server's default (two minutes) for ``Nats-Msg-Id`` dedupe."""

    name: str
    subjects: tuple[str, ...]
    limits: StreamLimits
    retention: Literal["limits", "workqueue"] = "limits"
    duplicate_window_s: float = 0.0

    def with_limits(self, max_bytes: int, max_age_s: float) -> StreamSpec:
        """The same stream with a service's configured byte and age limits (the discard policy is kept)."""
        return replace(self, limits=StreamLimits(max_bytes, max_age_s, self.limits.discard))


GUARDRAIL_DUPLICATE_WINDOW_S: Final = 120.0
"""How long JetStream remembers a guardrail batch id (guardrail-ingest's ``duplicate_window_s`` default)."""

_RETENTION: Final[dict[str, Literal["limits", "workqueue"]]] = {"GUARDRAIL_EVENTS": "workqueue"}
_WINDOW: Final[dict[str, float]] = {
    "GUARDRAIL_EVENTS": GUARDRAIL_DUPLICATE_WINDOW_S,
    "GUARDRAIL_DEAD_LETTERS": GUARDRAIL_DUPLICATE_WINDOW_S,
}

STREAM_SPECS: Final[dict[str, StreamSpec]] = {
    name: StreamSpec(
        name,
        subs,
        STREAM_LIMITS[name],
        _RETENTION.get(name, "limits"),
        _WINDOW.get(name, 0.0),
    )
    for name, subs in subjects.STREAMS.items()
}
"""By stream name (:data:`stockade.contracts.subjects.STREAMS`)."""


def stream_spec_for(subject: str) -> StreamSpec:
    """The specification of the stream that stores ``subject``."""
    return STREAM_SPECS[subjects.stream_for(subject)]


# --- durable consumers (their names appear in deploy/nats grants) ----------------------------------------------
GUARDRAIL_SINK_CONSUMER: Final = "guardrail-ingest-sink"
"""guardrail-ingest's sink workers on GUARDRAIL_EVENTS, shared by every replica (``jetstream.durable``)."""
GUARDRAIL_AUDIT_CONSUMER: Final = "guardrail-ingest-audit"
"""Prefix of guardrail-ingest's audit consumers, one per stream (``audit.durable``; :func:`audit_consumer`)."""
AUDIT_STREAMS: Final[tuple[str, ...]] = ("TRUST", "IDENTITY")


def audit_consumer(prefix: str, stream: str) -> str:
    """Durable name of the audit consumer on ``stream`` (``guardrail-ingest-audit-trust``)."""
    return f"{prefix}-{stream.lower()}"


CONSUMERS: Final[dict[str, tuple[str, ...]]] = {
    "GUARDRAIL_EVENTS": (GUARDRAIL_SINK_CONSUMER,),
    **{stream: (audit_consumer(GUARDRAIL_AUDIT_CONSUMER, stream),) for stream in AUDIT_STREAMS},
}
"""Durable consumers by stream, with their default names."""


@dataclass(frozen=True)
class BucketSpec:
    """A key-value bucket. Its TTL is a runtime choice (the nonce retention, the rate-limit ``ttl_seconds``)."""

    name: str
    max_bytes: int
    history: int = 1


BUCKETS: Final[dict[str, BucketSpec]] = {
    name: BucketSpec(name, max_bytes) for name, max_bytes in BUCKET_MAX_BYTES.items()
}
"""By bucket name: :data:`~stockade.contracts.subjects.KV_TRUST_NONCES`, ``KV_RATE_LIMITS``."""
