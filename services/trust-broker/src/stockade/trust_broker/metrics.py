"""trust-broker's Prometheus metrics, served with the shared ones on ``GET /metrics`` of its small listener
(``http.host``/``http.port``, default 127.0.0.1:8105; the broker has no other HTTP API).

``stockade_trust_decisions_total{outcome, reason}``: ``verified`` (reason ``ok``) or ``rejected`` with the
rejection reason (a fixed vocabulary of the trust layers: ``signature_invalid``, ``replay``, ``malformed``, ...).
"""

from __future__ import annotations

from typing import Any

from prometheus_client import Counter

TRUST_DECISIONS = Counter(
    "stockade_trust_decisions",
    "Agent messages the trust-broker verified and delivered, or rejected, by reason.",
    ["outcome", "reason"],
)

_children: dict[tuple[str, str], Any] = {}


def count_decision(verified: bool, reason: str | None) -> None:
    key = ("verified", "ok") if verified else ("rejected", reason or "unknown")
    child = _children.get(key)
    if child is None:
        child = _children[key] = TRUST_DECISIONS.labels(*key)
    child.inc()
