"""How an attested agent message travels over NATS: the header names both ends use.

Submission (agent -> ``trust.submit.<receiver>``): body = the payload bytes, unchanged; header
:data:`ATTESTATION` = the AttestationEnvelope's JSON (``stockade.guardrails.trust``). An optional reply subject
gets ``{"status": "delivered" | "rejected", ...}``.

Delivery (trust-broker -> ``agent.<receiver>.inbox``): body = the same payload bytes; headers carry what the
broker verified: :data:`SENDER`, :data:`SENDER_TRUST`, :data:`CAPABILITY` (when one was used), :data:`NONCE`,
:data:`KEY_ID`. Only the trust-broker can publish there (deploy/nats permissions), so a receiver may rely on them.
"""

from __future__ import annotations

from typing import Final

ATTESTATION: Final = "Stockade-Attestation"
SENDER: Final = "Stockade-Sender"
SENDER_TRUST: Final = "Stockade-Sender-Trust"
CAPABILITY: Final = "Stockade-Capability"
NONCE: Final = "Stockade-Nonce"
KEY_ID: Final = "Stockade-Key-Id"
