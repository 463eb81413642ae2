"""Fair ingest: per-key and per-project quotas, so one ingest key cannot stall every tenant's storage.

Two limits, each per ingest key and per project, answered 429 with ``Retry-After`` (nothing accepted):

* **events per second**, a token bucket (``rate`` per second, up to ``burst`` at once): a batch costs its event
  count, so a flood is held to the rate while a quiet tenant's batches pass at once;
* **bytes in flight**, the request bodies being read, checked and published to JetStream at this moment: a
  slow or large sender cannot take all of a replica's memory and publish bandwidth. Taken before the body is read
  (from ``Content-Length``, else the body cap) and given back when the request ends.

They apply with ``ingest.auth = "keys"`` (the default); ``open`` has no keys to be fair between. The quotas
are per replica (in memory, like the failed-authentication budget): with N replicas a key may send N
times its rate in total. Memory is bounded: at most ``tracked`` keys and projects are kept, and a full bucket
(an idle sender) is forgotten first. The token bucket is hand-written because the answer needs the wait until
the batch fits (``Retry-After``) and a check of two buckets before taking from either, which rate-limit
libraries do not expose.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field


class QuotaSettings(BaseModel):
    """Per-key and per-project quotas of one replica; 0 turns a limit off."""

    model_config = ConfigDict(extra="forbid")

    key_events_per_s: float = Field(
        default=1000.0, ge=0, description="Events per second one ingest key may send."
    )
    key_events_burst: int = Field(
        default=10_000, ge=0, description="Events one ingest key may send at once (a full bucket)."
    )
    project_events_per_s: float = Field(
        default=2000.0, ge=0, description="Events per second all keys of one project may send together."
    )
    project_events_burst: int = Field(
        default=20_000, ge=0, description="Events one project may send at once."
    )
    key_bytes_in_flight: int = Field(
        default=16 * 1024 * 1024, ge=0, description="Request bytes of one key being handled at once."
    )
    project_bytes_in_flight: int = Field(
        default=32 * 1024 * 1024, ge=0, description="Request bytes of one project being handled at once."
    )
    tracked: int = Field(
        default=10_000, ge=1, description="Keys and projects tracked at once (memory bound)."
    )


@dataclass
class _Bucket:
    tokens: float
    stamp: float


class EventRate:
    """Token buckets by name: ``rate`` tokens per second, at most ``burst``."""

    def __init__(
        self, rate: float, burst: int, *, tracked: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.rate, self.burst, self.tracked, self._clock = rate, burst, tracked, clock
        self._buckets: dict[str, _Bucket] = {}

    @property
    def enabled(self) -> bool:
        return self.rate > 0 and self.burst > 0

    def _bucket(self, name: str, now: float) -> _Bucket:
        bucket = self._buckets.get(name)
        if bucket is None:
            if len(self._buckets) >= self.tracked:
                self._forget_full(now)
            bucket = self._buckets[name] = _Bucket(float(self.burst), now)
        else:
            bucket.tokens = min(float(self.burst), bucket.tokens + (now - bucket.stamp) * self.rate)
            bucket.stamp = now
        return bucket

    def _forget_full(self, now: float) -> None:
        """Drop idle senders (their bucket refilled); if none is idle, the one with the most tokens."""
        for name, b in list(self._buckets.items()):
            if b.tokens + (now - b.stamp) * self.rate >= self.burst:
                del self._buckets[name]
        if len(self._buckets) >= self.tracked:
            del self._buckets[max(self._buckets, key=lambda n: self._buckets[n].tokens)]

    def wait_s(self, name: str, cost: int) -> float:
        """Seconds until ``cost`` events fit (0: now). A batch larger than the burst fits a full bucket."""
        if not self.enabled:
            return 0.0
        bucket = self._bucket(name, self._clock())
        need = min(float(cost), float(self.burst))
        return 0.0 if bucket.tokens >= need else (need - bucket.tokens) / self.rate

    def take(self, name: str, cost: int) -> None:
        if self.enabled:
            bucket = self._bucket(name, self._clock())
            bucket.tokens -= min(float(cost), float(self.burst))


class BytesInFlight:
    """Bytes being handled at once, by name. One request larger than the limit passes when it is alone."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._used: dict[str, int] = {}

    def reserve(self, name: str, size: int) -> bool:
        if self.limit <= 0:
            return True
        used = self._used.get(name, 0)
        if used and used + size > self.limit:
            return False
        self._used[name] = used + size
        return True

    def release(self, name: str, size: int) -> None:
        if self.limit <= 0:
            return
        left = self._used.get(name, 0) - size
        if left > 0:
            self._used[name] = left
        else:
            self._used.pop(name, None)

    def used(self, name: str) -> int:
        return self._used.get(name, 0)


class QuotaExceeded(Exception):
    """A quota refused the request: answer 429 with ``retry_after_s``."""

    def __init__(self, message: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class IngestQuotas:
    """The quotas of one replica. ``key`` is the ingest key id; ``project`` the project it sends for."""

    # Bytes in flight are held for milliseconds; a refused sender may retry soon.
    BYTES_RETRY_AFTER_S = 1

    def __init__(self, settings: QuotaSettings, *, clock: Callable[[], float] = time.monotonic) -> None:
        s = settings
        self.key_rate = EventRate(s.key_events_per_s, s.key_events_burst, tracked=s.tracked, clock=clock)
        self.project_rate = EventRate(
            s.project_events_per_s, s.project_events_burst, tracked=s.tracked, clock=clock
        )
        self.key_bytes = BytesInFlight(s.key_bytes_in_flight)
        self.project_bytes = BytesInFlight(s.project_bytes_in_flight)

    def reserve_bytes(self, key: str, project: str | None, size: int) -> None:
        """Hold ``size`` bytes for this request, or raise QuotaExceeded (nothing held then)."""
        if not self.key_bytes.reserve(key, size):
            raise QuotaExceeded(
                f"ingest key {key} has {self.key_bytes.used(key)} bytes in flight; the quota is "
                f"{self.key_bytes.limit}: wait for earlier requests to finish",
                self.BYTES_RETRY_AFTER_S,
            )
        if project is not None and not self.project_bytes.reserve(project, size):
            self.key_bytes.release(key, size)
            raise QuotaExceeded(
                f"project {project} has {self.project_bytes.used(project)} bytes in flight; the quota is "
                f"{self.project_bytes.limit}: wait for earlier requests to finish",
                self.BYTES_RETRY_AFTER_S,
            )

    def release_bytes(self, key: str, project: str | None, size: int) -> None:
        self.key_bytes.release(key, size)
        if project is not None:
            self.project_bytes.release(project, size)

    def check_empty(self, key: str, project: str | None) -> None:
        """Before the body is read: refuse at once when the key's (or its project's) bucket is empty, so a
        flood is turned away without the cost of reading and parsing its bodies."""
        self._refuse_over(key, project, 1)

    def take_events(self, key: str, project: str, count: int) -> None:
        """Take ``count`` events from both buckets, or raise QuotaExceeded (nothing taken then)."""
        self._refuse_over(key, project, count)
        self.key_rate.take(key, count)
        self.project_rate.take(project, count)

    def _refuse_over(self, key: str, project: str | None, count: int) -> None:
        waits = {f"ingest key {key}": (self.key_rate.wait_s(key, count), self.key_rate.rate)}
        if project is not None:
            waits[f"project {project}"] = (self.project_rate.wait_s(project, count), self.project_rate.rate)
        who, (wait, rate) = max(waits.items(), key=lambda item: item[1][0])
        if wait > 0:
            raise QuotaExceeded(
                f"{who} is over its quota of {rate:g} events per second: retry after the Retry-After seconds",
                max(1, math.ceil(wait)),
            )
