"""How attested messages travel over NATS (documented in the service README, "Wire format").

The header names are shared with the agents' client (``stockade.guardrails.trust.bus``), so they live in
:mod:`stockade.contracts.agent_wire`; this module re-exports them under the names the broker has always used.
"""

from __future__ import annotations

from stockade.contracts.agent_wire import ATTESTATION, CAPABILITY, KEY_ID, NONCE, SENDER, SENDER_TRUST

__all__ = ["ATTESTATION", "CAPABILITY", "KEY_ID", "NONCE", "SENDER", "SENDER_TRUST"]
