"""How attested messages travel over NATS (documented in the service README, "Wire format").

Submission (agent -> ``trust.submit.<receiver>``): body = the payload bytes, unchanged; header
``Stockade-Attestation`` = the AttestationEnvelope's JSON. An optional reply subject gets a JSON answer.

Delivery (trust-broker -> ``agent.<receiver>.inbox``): body = the same payload bytes; headers carry what the
broker verified: ``Stockade-Sender``, ``Stockade-Sender-Trust``, ``Stockade-Capability`` (when one was used),
``Stockade-Nonce``, ``Stockade-Key-Id``. Only the broker can publish there (NATS permissions), so a receiver
may rely on these headers.
"""

from __future__ import annotations

from typing import Final

ATTESTATION: Final = "Stockade-Attestation"
SENDER: Final = "Stockade-Sender"
SENDER_TRUST: Final = "Stockade-Sender-Trust"
CAPABILITY: Final = "Stockade-Capability"
NONCE: Final = "Stockade-Nonce"
KEY_ID: Final = "Stockade-Key-Id"
