"""Rate limiting per session (spec 1 and 8): request quota, tool-call quota, cumulative tool execution time.

- :meth:`RateLimiter.before_request` counts one model request and blocks past ``requests_per_session``.
- :meth:`RateLimiter.check_tool_call_limit` reserves one tool call and blocks past ``tool_calls_per_session``
  or once the session's cumulative tool execution time has reached ``tool_execution_seconds``.
- :meth:`RateLimiter.tool_call_started` / :meth:`RateLimiter.tool_call_finished` track how long each tool
  ran and add it to the session's total (kept in milliseconds).

Counters live in a :class:`CounterStore`; a reservation is one atomic bounded add, so two workers sharing a
NATS store can never both take the last slot.
"""

from __future__ import annotations

import math
import time
import uuid
from dataclasses import dataclass, field

from stockade.guardrails.policies.config import RateLimitsConfig
from stockade.guardrails.policies.counters.base import CounterStore
from stockade.guardrails.policies.counters.memory import InMemoryCounterStore
from stockade.guardrails.policies.counters.nats_kv import NatsKVCounterStore
from stockade.guardrails.policies.decisions import decision
from stockade.guardrails.verdict import Action, Verdict

NAME = "rate_limit"


@dataclass(frozen=True)
class ToolCallTicket:
    """Handed out by tool_call_started(); give it back to tool_call_finished()."""

    session_id: str
    tool: str
    call_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    started: float = field(default_factory=time.monotonic)


def store_from_config(config: RateLimitsConfig) -> CounterStore:
    """The configured backend: in memory, or a lazily connecting NATS KV store."""
    if config.backend == "nats":
        n = config.nats
        return NatsKVCounterStore(
            url=n.url,
            bucket=n.bucket,
            ttl_seconds=n.ttl_seconds,
            max_bytes=n.max_bytes,
            max_retries=n.max_retries,
            max_reconnect_attempts=n.max_reconnect_attempts,
            reconnect_wait_seconds=n.reconnect_wait_seconds,
            timeout_seconds=n.timeout_seconds,
            inbox_prefix=n.inbox_prefix,
        )
    return InMemoryCounterStore()


class RateLimiter:
    """Per-session quotas over a counter store."""

    def __init__(self, config: RateLimitsConfig | None = None, *, store: CounterStore | None = None) -> None:
        self.config = config or RateLimitsConfig()
        self.store = store or store_from_config(self.config)

    @staticmethod
    def _key(session_id: str, counter: str) -> str:
        return f"{counter}:{session_id}"

    async def before_request(self, session_id: str) -> Verdict:
        start = time.perf_counter()
        limit = self.config.requests_per_session
        if not self.config.enabled:
            return decision(NAME, Action.ALLOW)
        applied, value = await self.store.add(self._key(session_id, "requests"), 1, limit)
        reason = None if applied else "request_quota_exceeded"
        detail = {"counter": "requests", "count": value, "limit": limit}
        return self._verdict(reason, detail, start)

    async def check_tool_call_limit(self, session_id: str) -> Verdict:
        start = time.perf_counter()
        cfg = self.config
        if not cfg.enabled:
            return decision(NAME, Action.ALLOW)
        if cfg.tool_execution_seconds is not None:
            used_ms = await self.store.get(self._key(session_id, "tool_ms"))
            if used_ms >= cfg.tool_execution_seconds * 1000:
                detail = {
                    "counter": "tool_execution_seconds",
                    "used_seconds": used_ms / 1000,
                    "limit": cfg.tool_execution_seconds,
                }
                return self._verdict("tool_time_exceeded", detail, start)
        applied, value = await self.store.add(
            self._key(session_id, "tool_calls"), 1, cfg.tool_calls_per_session
        )
        reason = None if applied else "tool_call_quota_exceeded"
        return self._verdict(
            reason, {"counter": "tool_calls", "count": value, "limit": cfg.tool_calls_per_session}, start
        )

    def tool_call_started(self, session_id: str, tool: str) -> ToolCallTicket:
        return ToolCallTicket(session_id=session_id, tool=tool)

    async def tool_call_finished(
        self, ticket: ToolCallTicket, *, duration_seconds: float | None = None
    ) -> Verdict:
        """Add the call's run time to the session total; WARN once the total has reached the limit."""
        start = time.perf_counter()
        elapsed = duration_seconds if duration_seconds is not None else time.monotonic() - ticket.started
        elapsed_ms = max(0, math.ceil(elapsed * 1000))
        _, total_ms = await self.store.add(self._key(ticket.session_id, "tool_ms"), elapsed_ms)
        limit = self.config.tool_execution_seconds
        detail = {
            "counter": "tool_execution_seconds",
            "tool": ticket.tool,
            "call_seconds": elapsed_ms / 1000,
            "used_seconds": total_ms / 1000,
            "limit": limit,
        }
        exhausted = self.config.enabled and limit is not None and total_ms >= limit * 1000
        action = Action.WARN if exhausted else Action.ALLOW
        elapsed_check = (time.perf_counter() - start) * 1e3
        return decision(
            NAME,
            action,
            reason="tool_time_exhausted" if exhausted else None,
            detail=detail,
            duration_ms=elapsed_check,
        )

    async def usage(self, session_id: str) -> dict[str, float]:
        """Current counters of a session: requests, tool_calls, tool_execution_seconds."""
        return {
            "requests": await self.store.get(self._key(session_id, "requests")),
            "tool_calls": await self.store.get(self._key(session_id, "tool_calls")),
            "tool_execution_seconds": await self.store.get(self._key(session_id, "tool_ms")) / 1000,
        }

    @staticmethod
    def _verdict(reason: str | None, detail: dict[str, object], start: float) -> Verdict:
        action = Action.ALLOW if reason is None else Action.BLOCK
        return decision(
            NAME, action, reason=reason, detail=detail, duration_ms=(time.perf_counter() - start) * 1e3
        )

    async def close(self) -> None:
        await self.store.close()
