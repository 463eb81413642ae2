"""Who follows which guardrail policy: the callbacks a client calls when push brings a newly active version
(``watch_policy``; ``GuardrailSystem.from_platform`` is one). Shared by the sync and the async client."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from stockade.client.models import PolicyVersion

log = logging.getLogger("stockade.client")

PolicyListener = Callable[[PolicyVersion], None]


class PolicyWatchers:
    """Thread-safe: listeners per (project, policy) and the version each was last told about."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._listeners: dict[tuple[str, str], list[PolicyListener]] = {}
        self._told: dict[tuple[str, str], tuple[int, str]] = {}

    def add(self, project_id: str, policy_name: str, listener: PolicyListener) -> None:
        with self._lock:
            self._listeners.setdefault((project_id, policy_name), []).append(listener)

    def remove(self, project_id: str, policy_name: str, listener: PolicyListener) -> None:
        with self._lock:
            listeners = self._listeners.get((project_id, policy_name), [])
            if listener in listeners:
                listeners.remove(listener)

    def told(self, found: PolicyVersion) -> None:
        """``found`` is what the listeners already run on (read at start): not delivered again."""
        with self._lock:
            self._told[(found.project_id, found.policy_name)] = (found.version, found.sha256)

    def deliver(self, found: PolicyVersion) -> None:
        """Call every listener of the policy with ``found``, once per version; a listener's error is logged."""
        key = (found.project_id, found.policy_name)
        with self._lock:
            if self._told.get(key) == (found.version, found.sha256):
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
