"""NATS header names Stockade sets or reads, other than the agent-message ones (:mod:`.agent_wire`).

JetStream's own headers keep their server-defined spelling; Stockade's start with ``Stockade-``.
"""

from __future__ import annotations

from typing import Final

MSG_ID: Final = "Nats-Msg-Id"
"""JetStream stores a message once per id within the stream's duplicate window; producers put ``event_id`` here."""
EXPECTED_LAST_SUBJECT_SEQUENCE: Final = "Nats-Expected-Last-Subject-Sequence"
"""JetStream refuses the publish unless the subject's last sequence is this value (``"0"``: a new key)."""
SCHEMA_VERSION: Final = "Stockade-Schema-Version"
"""The event's ``schema_version`` (:class:`stockade.contracts.EventEnvelope`)."""
TRACEPARENT: Final = "traceparent"
"""W3C trace context (stockade.runtime.tracing injects it into every message it publishes)."""
TRACESTATE: Final = "tracestate"
