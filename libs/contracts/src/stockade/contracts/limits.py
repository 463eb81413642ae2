"""Byte and age limits of every JetStream stream and key-value bucket Stockade creates.

JetStream reserves a stream's ``max_bytes`` from the server's ``max_file_store`` when the stream is created, so
with a byte limit on every stream no stream can take another's room (the guardrail events stream cannot fill the
storage the trust-broker's nonce bucket needs), and a server too small for the sum refuses the creation at
startup instead of failing later. The values and the reasoning behind each are in deploy/README.md ("JetStream
limits"); the services take them as defaults and their settings can override them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from stockade.contracts import subjects

MIB: Final = 1024 * 1024
DAY: Final = 24 * 3600.0


@dataclass(frozen=True)
class StreamLimits:
    """``max_bytes`` and ``max_age`` (seconds) of a stream, and what happens when it is full.

    ``discard="new"`` refuses a publish into a full stream (the publisher sees the error and retries later);
    ``"old"`` drops the oldest messages to make room.
    """

    max_bytes: int
    max_age_s: float
    discard: Literal["old", "new"]


STREAM_LIMITS: Final[dict[str, StreamLimits]] = {
    # Domain events from the outboxes (one per human action): small and rare; history for late consumers.
    "PROMPTS": StreamLimits(64 * MIB, 30 * DAY, "old"),
    "MODELS": StreamLimits(64 * MIB, 30 * DAY, "old"),
    "IDENTITY": StreamLimits(64 * MIB, 30 * DAY, "old"),
    # Accepted guardrail batches not yet stored (a work queue: a stored batch leaves it). Full means the stores
    # are behind: refuse new batches (503, the library keeps them) rather than drop accepted ones.
    "GUARDRAIL_EVENTS": StreamLimits(2048 * MIB, 7 * DAY, "new"),
    # Events no store would take, until an operator replays them; full: keep the batch, never drop a letter.
    "GUARDRAIL_DEAD_LETTERS": StreamLimits(256 * MIB, 30 * DAY, "new"),
    # trust.rejected.v1 audit: an attacker can make many; keep the newest.
    "TRUST": StreamLimits(256 * MIB, 7 * DAY, "old"),
}
"""Per stream of :data:`stockade.contracts.subjects.STREAMS`."""

BUCKET_MAX_BYTES: Final[dict[str, int]] = {
    # One key per nonce for the freshness window (~70 s); about 200 bytes each. Full: claims fail and the broker
    # rejects messages (fail closed), never forgets a nonce early.
    subjects.KV_TRUST_NONCES: 1024 * MIB,
    # One key per session and counter, kept for the bucket TTL (a day by default). Full: new counters fail and
    # the rate-limit check fails closed.
    subjects.KV_RATE_LIMITS: 256 * MIB,
}
"""Per key-value bucket. A bucket's age limit is its TTL (the nonce retention, the rate-limit ``ttl_seconds``);
buckets refuse writes when full (``discard="new"``, the key-value default)."""

AGENT_RATE_LIMIT_MAX_BYTES: Final = 32 * MIB
"""Each agent's own rate-limit bucket (``subjects.rate_limit_bucket``) in the AGENTS account. deploy/nats caps
every stream there at this size (``disk_max_stream_bytes``) and requires a byte limit, so an agent that fills its
bucket blocks only its own checks; the account's ``max_file`` reserves room for ``max_streams`` such buckets."""
