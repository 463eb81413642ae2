"""AttestationEnvelope (spec 2): what AttestationVerifier.sign() produces and layer B verifies.

Signed fields, encoded with :func:`~.canonical.canonical_json` and MACed with HMAC-SHA256 under the sender's key
``key_id``::

    {"capability": <str|null>, "key_id": <str>, "nonce": <32+ lowercase hex>, "payload_sha256": <64 lowercase hex>,
     "receiver": <str>, "sender": <str>, "timestamp_ms": <int, Unix epoch milliseconds UTC>, "v": 1}

``signature`` is the lowercase hex HMAC-SHA256 of those bytes. The envelope travels as its JSON object
(signed fields plus ``signature``); receivers ignore unknown fields.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from stockade.guardrails.trust.canonical import Scalar, canonical_json, canonical_string
from stockade.guardrails.trust.config import AGENT_ID_PATTERN, KEY_ID_PATTERN

ENVELOPE_VERSION = 1
HEX64 = r"^[0-9a-f]{64}$"
NONCE_PATTERN = r"^[0-9a-f]{32,128}$"


class AttestationEnvelope(BaseModel):
    """HMAC signature, payload hash, nonce and timestamp of one agent-to-agent message."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    v: Literal[1] = Field(default=1, description="Envelope format version.")
    sender: str = Field(pattern=AGENT_ID_PATTERN, description="Claimed sender agent id.")
    receiver: str = Field(pattern=AGENT_ID_PATTERN, description="Intended receiver agent id.")
    key_id: str = Field(pattern=KEY_ID_PATTERN, description="Which of the sender's keys signed.")
    payload_sha256: str = Field(pattern=HEX64, description="SHA-256 of the payload bytes, lowercase hex.")
    nonce: str = Field(pattern=NONCE_PATTERN, description="At least 128 random bits, lowercase hex.")
    timestamp_ms: int = Field(ge=0, lt=2**53, description="Signing time, Unix epoch milliseconds (UTC).")
    capability: str | None = Field(default=None, max_length=200, description="Capability the message uses.")
    signature: str = Field(pattern=HEX64, description="HMAC-SHA256 over the canonical signed fields, hex.")

    def signed_fields(self) -> dict[str, Scalar]:
        return signed_fields(**self.model_dump(exclude={"v", "signature"}))

    def signing_input(self) -> bytes:
        """The exact bytes the HMAC covers: ``canonical_json(self.signed_fields())``, built directly."""
        return signing_input(
            sender=self.sender,
            receiver=self.receiver,
            key_id=self.key_id,
            payload_sha256=self.payload_sha256,
            nonce=self.nonce,
            timestamp_ms=self.timestamp_ms,
            capability=self.capability,
        )

    def to_json(self) -> str:
        return self.model_dump_json()

    @classmethod
    def parse(cls, raw: str | bytes) -> AttestationEnvelope | None:
        """Parse an envelope's JSON; None when it is not a well-formed envelope."""
        try:
            return cls.model_validate_json(raw)
        except ValidationError:
            return None


def signed_fields(
    *,
    sender: str,
    receiver: str,
    key_id: str,
    payload_sha256: str,
    nonce: str,
    timestamp_ms: int,
    capability: str | None,
) -> dict[str, Scalar]:
    return {
        "capability": capability,
        "key_id": key_id,
        "nonce": nonce,
        "payload_sha256": payload_sha256,
        "receiver": receiver,
        "sender": sender,
        "timestamp_ms": timestamp_ms,
        "v": ENVELOPE_VERSION,
    }


_V1 = f',"v":{ENVELOPE_VERSION}}}'


def signing_input(
    *,
    sender: str,
    receiver: str,
    key_id: str,
    payload_sha256: str,
    nonce: str,
    timestamp_ms: int,
    capability: str | None,
) -> bytes:
    """``canonical_json(signed_fields(...))`` without the generic encoder (the verification hot path).

    The member order is the fixed sorted key order of the signed fields; every string goes through the same
    JCS string encoder, so the bytes are identical for any input (tested against :func:`canonical_json`).
    """
    if type(timestamp_ms) is not int or not 0 <= timestamp_ms < 2**53:
        fields = signed_fields(
            sender=sender,
            receiver=receiver,
            key_id=key_id,
            payload_sha256=payload_sha256,
            nonce=nonce,
            timestamp_ms=timestamp_ms,
            capability=capability,
        )
        return canonical_json(fields)  # the generic encoder raises the precise error
    enc = canonical_string
    return (
        f'{{"capability":{"null" if capability is None else enc(capability)},"key_id":{enc(key_id)},'
        f'"nonce":{enc(nonce)},"payload_sha256":{enc(payload_sha256)},"receiver":{enc(receiver)},'
        f'"sender":{enc(sender)},"timestamp_ms":{timestamp_ms}{_V1}'
    ).encode()
