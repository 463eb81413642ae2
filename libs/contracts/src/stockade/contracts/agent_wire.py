"""How an attested agent message travels over NATS: the header names both ends use.

Submission (agent -> ``trust.submit.<receiver>``): body = the payload bytes, unchanged; header
:data:`ATTESTATION` = the AttestationEnvelope's JSON (``stockade.guardrails.trust``). An optional reply subject
gets ``{"status": "delivered" | "rejected", ...}``: with the header :data:`REPLY_TOKEN` the broker answers on
``agent.<sender>.reply.<token>`` (``subjects.agent_reply``), the sender being the NATS user the server names in
``Nats-Request-Info`` (the service import shares it), so an agent can never make the broker publish on a subject
of its choosing. The message's own reply subject is answered only on a bus without accounts (no request info).

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
REPLY_TOKEN: Final = "Stockade-Reply-Token"  # noqa: S105 (a header name)
REQUEST_INFO: Final = "Nats-Request-Info"
"""Set by nats-server on a request that crosses a service import with ``share: true``: the requester's account
and user, which a client cannot forge (the server overwrites the header)."""
