"""How attested messages travel over NATS (documented in the service README, "Wire format").

The header names are shared with the agents' client (``stockade.guardrails.trust.bus``), so they live in
:mod:`stockade.contracts.agent_wire`; this module re-exports them under the names the broker has always used,
and decides where the broker's answer to a submission goes (:func:`reply_subject`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from stockade.contracts import subjects
from stockade.contracts.agent_wire import (
    ATTESTATION,
    CAPABILITY,
    KEY_ID,
    NONCE,
    REPLY_TOKEN,
    REQUEST_INFO,
    SENDER,
    SENDER_TRUST,
)

__all__ = [
    "ATTESTATION",
    "CAPABILITY",
    "KEY_ID",
    "NONCE",
    "REPLY_TOKEN",
    "SENDER",
    "SENDER_TRUST",
    "reply_subject",
]


def authenticated_user(headers: Mapping[str, str] | None) -> str | None:
    """The NATS user nats-server names in ``Nats-Request-Info`` (set by the server on a request crossing the
    AGENTS -> STOCKADE service import with ``share: true``; a client's own header is overwritten), or None."""
    raw = (headers or {}).get(REQUEST_INFO)
    if not raw:
        return None
    try:
        info = json.loads(raw)
    except ValueError:
        return None
    user = info.get("user") if isinstance(info, dict) else None
    return user if isinstance(user, str) else None


def reply_subject(headers: Mapping[str, str] | None, reply_to: str) -> str | None:
    """Where to answer a submission, never a subject the sender may name freely.

    * Across accounts (the server shared the requester): only ``agent.<that user>.reply.<token>``, when the
      submission carries a valid :data:`REPLY_TOKEN`; else no answer. The message's reply subject is ignored: NATS
      does not check a reply subject against the sender's permissions, so honouring it would let an agent make
      the broker publish into any subject of its account (another agent's inbox, the catalogue's events).
    * On a bus without accounts (no request info, nothing to separate): the token subject of the claimed sender
      is not known, so the message's own reply subject, as before.
    """
    user = authenticated_user(headers)
    if user is None and (headers or {}).get(REQUEST_INFO):
        return None  # unreadable request info: answer nobody
    token = (headers or {}).get(REPLY_TOKEN)
    if user is not None:
        if token and subjects.is_agent_id(token) and subjects.is_agent_id(user):
            return subjects.agent_reply(user, token)
        return None
    return reply_to or None
