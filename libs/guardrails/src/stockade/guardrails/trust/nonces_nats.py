"""JetStreamNonceStore: nonces in a NATS JetStream key-value bucket, shared by every replica.

``kv.create()`` writes a key only if it does not exist (server-side, expected-last-subject-sequence 0), so two
replicas verifying the same envelope at the same moment cannot both succeed. Entries expire through the
*bucket-level* TTL (``max_age`` of the backing stream), which every JetStream version honours; per-key TTL
(NATS >= 2.11) is silently ignored by 2.9 servers and is not used. The bucket TTL must be at least the
verifier's nonce retention (freshness window + 2 x clock skew); :meth:`JetStreamNonceStore.open` checks it.

Needs the ``nats`` extra (nats-py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from stockade.guardrails.errors import AttestationError, ConfigError
from stockade.guardrails.extras import require

if TYPE_CHECKING:
    from nats.js.client import JetStreamContext
    from nats.js.kv import KeyValue


class JetStreamNonceStore:
    """A :class:`~.nonces.NonceStore` on a JetStream KV bucket."""

    def __init__(self, kv: KeyValue) -> None:
        self._kv = kv
        self._errors: Any = require("nats.js.errors", extra="nats", feature="JetStreamNonceStore")

    @classmethod
    async def open(
        cls, js: JetStreamContext, bucket: str, *, retention_s: float, memory: bool = False
    ) -> JetStreamNonceStore:
        """Bind to ``bucket``, creating it with TTL ``retention_s`` when missing.

        An existing bucket whose TTL is shorter than ``retention_s`` (or unlimited) is refused with ConfigError:
        nonces would be forgotten while their messages are still fresh, or kept forever.
        """
        api: Any = require("nats.js.api", extra="nats", feature="JetStreamNonceStore")
        errors: Any = require("nats.js.errors", extra="nats", feature="JetStreamNonceStore")
        try:
            kv = await js.key_value(bucket)
        except errors.BucketNotFoundError:
            storage = api.StorageType.MEMORY if memory else api.StorageType.FILE
            config = api.KeyValueConfig(bucket=bucket, history=1, ttl=retention_s, storage=storage)
            try:
                kv = await js.create_key_value(config=config)
            except errors.BadRequestError:  # created concurrently by another replica
                kv = await js.key_value(bucket)
        status = await kv.status()
        ttl = status.ttl
        if not ttl or ttl < retention_s:
            raise ConfigError(
                f"nonce bucket {bucket!r} keeps entries for {ttl or 'ever'} s; "
                f"it must be at least the nonce retention ({retention_s} s)"
            )
        return cls(kv)

    async def claim(self, key: str, expires_at: float) -> bool:
        # expires_at is enforced by the bucket TTL (>= retention), not per key.
        try:
            await self._kv.create(key, b"")
        except self._errors.KeyWrongLastSequenceError:
            return False
        except Exception as exc:  # fail closed: unknown replay status never passes
            raise AttestationError(f"nonce store unavailable: {type(exc).__name__}: {exc}") from exc
        return True
