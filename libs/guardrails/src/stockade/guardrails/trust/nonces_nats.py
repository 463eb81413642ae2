"""JetStreamNonceStore: nonces in a NATS JetStream key-value bucket, shared by every replica.

``kv.create()`` writes a key only if it does not exist (server-side, expected-last-subject-sequence 0), so two
replicas verifying the same envelope at the same moment cannot both succeed. Entries expire through the
*bucket-level* TTL (``max_age`` of the backing stream), which every JetStream version honours; per-key TTL
(NATS >= 2.11) is silently ignored by 2.9 servers and is not used. The bucket TTL must be at least the
verifier's nonce retention (freshness window + 2 x clock skew); :meth:`JetStreamNonceStore.open` checks it.

Claims are pipelined when the store is opened with the nats-py client (``open(..., client=nc)``): the same
conditional publish as ``kv.create()`` (header ``Nats-Expected-Last-Subject-Sequence: 0``), answered on one
reply subscription, with one timer task failing late answers instead of a timeout per claim. Many claims are
then in flight at once at a fraction of ``kv.create()``'s client cost; the server-side check is the same.

Needs the ``nats`` extra (nats-py).
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

from stockade.guardrails.errors import AttestationError, ConfigError
from stockade.guardrails.extras import require

if TYPE_CHECKING:
    from nats.aio.client import Client
    from nats.aio.msg import Msg
    from nats.js.client import JetStreamContext
    from nats.js.kv import KeyValue

NONCE_BUCKET_MAX_BYTES = 1024 * 1024 * 1024
"""Default size bound of a new nonce bucket: about five million nonces of ~200 bytes."""
_EXPECT_NEW_KEY = {"Nats-Expected-Last-Subject-Sequence": "0"}
_WRONG_LAST_SEQUENCE = (10071, 10164)  # JSStreamWrongLastSequenceErrF, JSStreamWrongLastSequenceConstantErr


class JetStreamNonceStore:
    """A :class:`~.nonces.NonceStore` on a JetStream KV bucket."""

    def __init__(self, kv: KeyValue, pipeline: PipelinedCreate | None = None) -> None:
        self._kv = kv
        self._pipeline = pipeline
        self._errors: Any = require("nats.js.errors", extra="nats", feature="JetStreamNonceStore")

    @classmethod
    async def open(
        cls,
        js: JetStreamContext,
        bucket: str,
        *,
        retention_s: float,
        memory: bool = False,
        client: Client | None = None,
        timeout_s: float = 5.0,
        max_bytes: int = NONCE_BUCKET_MAX_BYTES,
    ) -> JetStreamNonceStore:
        """Bind to ``bucket``, creating it with TTL ``retention_s`` and at most ``max_bytes`` when missing.

        JetStream reserves ``max_bytes`` for the bucket, so no other stream can take its room; a full bucket
        refuses new nonces and claims fail (messages are rejected, never accepted unchecked).

        With ``client`` (the connection ``js`` belongs to) claims are pipelined (module docstring); a claim not
        answered within ``timeout_s`` raises AttestationError.

        An existing bucket whose TTL is shorter than ``retention_s`` (or unlimited) is refused with ConfigError:
        nonces would be forgotten while their messages are still fresh, or kept forever.
        """
        api: Any = require("nats.js.api", extra="nats", feature="JetStreamNonceStore")
        errors: Any = require("nats.js.errors", extra="nats", feature="JetStreamNonceStore")
        try:
            kv = await js.key_value(bucket)
        except errors.BucketNotFoundError:
            storage = api.StorageType.MEMORY if memory else api.StorageType.FILE
            config = api.KeyValueConfig(
                bucket=bucket, history=1, ttl=retention_s, storage=storage, max_bytes=max_bytes
            )
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
        pipeline = None
        if client is not None:
            pipeline = PipelinedCreate(client, f"$KV.{bucket}.", timeout_s)
            await pipeline.start()
        return cls(kv, pipeline)

    async def claim(self, key: str, expires_at: float) -> bool:
        # expires_at is enforced by the bucket TTL (>= retention), not per key.
        if self._pipeline is not None:
            return await self._pipeline.create(key)
        try:
            await self._kv.create(key, b"")
        except self._errors.KeyWrongLastSequenceError:
            return False
        except Exception as exc:  # fail closed: unknown replay status never passes
            raise AttestationError(f"nonce store unavailable: {type(exc).__name__}: {exc}") from exc
        return True


class PipelinedCreate:
    """``kv.create(key, b"")`` as a conditional publish with a shared reply subscription (module docstring)."""

    def __init__(self, client: Client, subject_prefix: str, timeout_s: float) -> None:
        if timeout_s <= 0:
            raise ValueError("timeout_s must be positive")
        self._nc = client
        self._prefix = subject_prefix
        self._timeout = timeout_s
        self._inbox = client.new_inbox() + "."
        self._pending: dict[str, tuple[float, asyncio.Future[bool]]] = {}
        self._next = 0
        self._sweeper: asyncio.Task[None] | None = None

    async def start(self) -> None:
        await self._nc.subscribe(self._inbox + "*", cb=self._on_reply, pending_msgs_limit=1_000_000)

    async def create(self, key: str) -> bool:
        """True when ``key`` was new, False when it exists; AttestationError when the server does not say."""
        loop = asyncio.get_running_loop()
        self._next += 1
        token = str(self._next)
        future: asyncio.Future[bool] = loop.create_future()
        self._pending[token] = (loop.time() + self._timeout, future)
        if self._sweeper is None or self._sweeper.done():
            self._sweeper = loop.create_task(self._sweep())
        try:
            await self._nc.publish(
                self._prefix + key, b"", reply=self._inbox + token, headers=_EXPECT_NEW_KEY
            )
            return await future
        except AttestationError:
            raise
        except Exception as exc:  # fail closed: unknown replay status never passes
            raise AttestationError(f"nonce store unavailable: {type(exc).__name__}: {exc}") from exc
        finally:
            self._pending.pop(token, None)

    async def _on_reply(self, msg: Msg) -> None:
        entry = self._pending.get(msg.subject[len(self._inbox) :])
        if entry is None or entry[1].done():
            return  # answered after its timeout
        future = entry[1]
        if msg.headers and msg.headers.get("Status") == "503":
            future.set_exception(AttestationError("nonce store unavailable: no stream for the nonce bucket"))
            return
        try:
            answer = json.loads(msg.data)
        except ValueError:
            answer = None
        if isinstance(answer, dict) and isinstance(answer.get("seq"), int) and "error" not in answer:
            future.set_result(True)
        elif isinstance(answer, dict) and isinstance(error := answer.get("error"), dict):
            if error.get("err_code") in _WRONG_LAST_SEQUENCE:
                future.set_result(False)
            else:
                future.set_exception(AttestationError(f"nonce store unavailable: {error.get('description')}"))
        else:
            future.set_exception(AttestationError("nonce store unavailable: unexpected answer"))

    async def _sweep(self) -> None:
        """Fail claims older than the timeout; runs while any claim is pending."""
        loop = asyncio.get_running_loop()
        while self._pending:
            await asyncio.sleep(min(0.1, self._timeout / 2))
            now = loop.time()
            for deadline, future in list(self._pending.values()):
                if deadline <= now and not future.done():
                    future.set_exception(
                        AttestationError(f"nonce store did not answer within {self._timeout} s")
                    )
