"""Who follows which guardrail policy: the callbacks a client calls when push brings a newly active version
(``watch_policy``; ``GuardrailSystem.from_platform`` is one), and which of them push does not bring (polled
every ``settings.policy_poll_s``). Shared by the sync and the async client."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable

from stockade.client.cache import policy_key
from stockade.client.core import ClientCore
from stockade.client.models import PolicyVersion

log = logging.getLogger("stockade.client")

PolicyListener = Callable[[PolicyVersion], None]


class PolicyWatchers:
    """Thread-safe: listeners per (project, policy) and the version each was last told about."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._delivering = threading.Lock()  # listeners hear of versions in order, one at a time
        self._listeners: dict[tuple[str, str], list[PolicyListener]] = {}
        self._told: dict[tuple[str, str], tuple[int, str]] = {}
        self._pushed: set[tuple[str, str]] = set()  # followed by push (the subscription was granted)

    def add(self, project_id: str, policy_name: str, listener: PolicyListener) -> None:
        with self._lock:
            self._listeners.setdefault((project_id, policy_name), []).append(listener)

    def remove(self, project_id: str, policy_name: str, listener: PolicyListener) -> None:
        with self._lock:
            listeners = self._listeners.get((project_id, policy_name), [])
            if listener in listeners:
                listeners.remove(listener)

    def pushed(self, project_id: str, policy_name: str) -> None:
        with self._lock:
            self._pushed.add((project_id, policy_name))

    def to_poll(self, push_active: bool) -> list[tuple[str, str]]:
        """The watched policies push does not bring now: those never subscribed, and every one while push is
        down (no connection, or disconnected: events sent meanwhile are lost)."""
        with self._lock:
            return [
                key
                for key, listeners in self._listeners.items()
                if listeners and (not push_active or key not in self._pushed)
            ]

    def told(self, found: PolicyVersion) -> None:
        """``found`` is what the listeners already run on (read at start): not delivered again."""
        with self._lock:
            self._told[(found.project_id, found.policy_name)] = (found.version, found.sha256)

    def deliver(self, found: PolicyVersion) -> None:
        """Call every listener of the policy with ``found``, once per version and never back to an older one
        (push and the poll may read two versions at once; every activation is a newer version); one delivery
        at a time; a listener's error is logged."""
        key = (found.project_id, found.policy_name)
        with self._delivering:
            with self._lock:
                told = self._told.get(key)
                if told is not None and (told == (found.version, found.sha256) or found.version < told[0]):
                    return
                self._told[key] = (found.version, found.sha256)
                listeners = list(self._listeners.get(key, []))
            for listener in listeners:
                try:
                    listener(found)
                except Exception:  # a listener's failure is its own; the others still hear of the version
                    log.exception(
                        "a listener of policy %r of project %r failed", found.policy_name, found.project_id
                    )


async def poll_policies(
    watchers: PolicyWatchers, core: ClientCore, refresh: Callable[[str, str], Awaitable[None]]
) -> None:
    """The async client's poll: every ``policy_poll_s``, re-read what push does not bring (until cancelled)."""
    while True:
        await asyncio.sleep(core.settings.policy_poll_s)
        for project_id, policy_name in watchers.to_poll(core.push_active):
            core.cache.invalidate(policy_key(project_id, policy_name))  # revalidate: a 304 when unchanged
            await refresh(project_id, policy_name)
