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

A pipelined claim writes a token of its own as the key's value (this process's random prefix and a counter). When
its answer never comes (the server died after storing the key, the connection dropped with the claim in flight),
the outcome is looked up instead of guessed: the key holding this claim's token means the claim succeeded, a key
holding another token means a replay, no key means the claim never got stored and is made again. Only after
``resolve_timeout_s`` without an answer does the claim fail (closed). Without this, a message whose claim was
stored just before a NATS restart was refused as unavailable and then, when its sender retried, as a replay:
lost although never delivered (tests/faults).

Needs the ``nats`` extra (nats-py).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import secrets
from typing import TYPE_CHECKING, Any

from stockade.contracts import headers
from stockade.contracts.streams import BUCKETS, BucketSpec
from stockade.contracts.subjects import KV_TRUST_NONCES
from stockade.guardrails.errors import AttestationError, ConfigError
from stockade.guardrails.extras import require

if TYPE_CHECKING:
    from nats.aio.client import Client
    from nats.aio.msg import Msg
    from nats.js.client import JetStreamContext
    from nats.js.kv import KeyValue

NONCE_BUCKET_MAX_BYTES = BUCKETS[KV_TRUST_NONCES].max_bytes
"""Default size bound of a new nonce bucket: about five million nonces of ~200 bytes."""
_EXPECT_NEW_KEY = {headers.EXPECTED_LAST_SUBJECT_SEQUENCE: "0"}
_WRONG_LAST_SEQUENCE = (10071, 10164)  # JSStreamWrongLastSequenceErrF, JSStreamWrongLastSequenceConstantErr


class JetStreamNonceStore:
    """A :class:`~.nonces.NonceStore` on a JetStream KV bucket."""

    def __init__(
        self, kv: KeyValue, pipeline: PipelinedCreate | None = None, retention_s: float | None = None
    ) -> None:
        self._kv = kv
        # How long the bucket keeps a nonce (its TTL): a configuration needing longer must not be loaded.
        self.retention_s = retention_s
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
        resolve_timeout_s: float = 30.0,
        replicas: int = 1,
    ) -> JetStreamNonceStore:
        """Bind to ``bucket``, creating it with TTL ``retention_s`` and at most ``max_bytes`` when missing.

        JetStream reserves ``max_bytes`` for the bucket, so no other stream can take its room; a full bucket
        refuses new nonces and claims fail (messages are rejected, never accepted unchecked).

        With ``client`` (the connection ``js`` belongs to) claims are pipelined (module docstring); a claim not
        answered within ``timeout_s`` is looked up until ``resolve_timeout_s``, then raises AttestationError.
        ``replicas``: copies of a new bucket in a JetStream cluster (1 on a single server).

        An existing bucket whose TTL is shorter than ``retention_s`` (or unlimited) is refused with ConfigError:
        nonces would be forgotten while their messages are still fresh, or kept forever.
        """
        require("nats.js.api", extra="nats", feature="JetStreamNonceStore")
        from stockade.contracts.jetstream import ensure_bucket

        spec = BucketSpec(bucket, max_bytes)
        kv = await ensure_bucket(js, spec, ttl_s=retention_s, replicas=replicas, memory=memory)
        status = await kv.status()
        ttl = status.ttl
        if not ttl or ttl < retention_s:
            raise ConfigError(
                f"nonce bucket {bucket!r} keeps entries for {ttl or 'ever'} s; "
                f"it must be at least the nonce retention ({retention_s} s)"
            )
        pipeline = None
        if client is not None:
            pipeline = PipelinedCreate(
                client, f"$KV.{bucket}.", timeout_s, kv=kv, resolve_timeout_s=resolve_timeout_s
            )
            await pipeline.start()
        return cls(kv, pipeline, retention_s=ttl)

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


class _Unanswered(Exception):
    """The claim may or may not be stored: no answer came (timeout, connection lost)."""


class PipelinedCreate:
    """``kv.create(key, token)`` as a conditional publish with a shared reply subscription (module docstring)."""

    def __init__(
        self,
        client: Client,
        subject_prefix: str,
        timeout_s: float,
        *,
        kv: KeyValue | None = None,
        resolve_timeout_s: float = 30.0,
    ) -> None:
        if timeout_s <= 0:
            raise ValueError("timeout_s must be positive")
        self._nc = client
        self._kv = kv
        self._prefix = subject_prefix
        self._timeout = timeout_s
        self._resolve_timeout = resolve_timeout_s
        self._inbox = client.new_inbox() + "."
        self._pending: dict[str, tuple[float, asyncio.Future[bool]]] = {}
        self._next = 0
        self._sweeper: asyncio.Task[None] | None = None
        self._claimant = secrets.token_hex(8)  # this process; a counter tells its claims apart
        self._claims = itertools.count()

    async def start(self) -> None:
        await self._nc.subscribe(self._inbox + "*", cb=self._on_reply, pending_msgs_limit=1_000_000)

    async def create(self, key: str) -> bool:
        """True when ``key`` was new, False when it exists; AttestationError when the server does not say."""
        token = f"{self._claimant}.{next(self._claims)}".encode()
        try:
            return await self._create_once(key, token)
        except _Unanswered as exc:
            if self._kv is None:
                raise AttestationError(f"nonce store unavailable: {exc}") from exc
            return await self._resolve(key, token, str(exc))

    async def _create_once(self, key: str, token: bytes) -> bool:
        loop = asyncio.get_running_loop()
        self._next += 1
        reply = str(self._next)
        future: asyncio.Future[bool] = loop.create_future()
        self._pending[reply] = (loop.time() + self._timeout, future)
        if self._sweeper is None or self._sweeper.done():
            self._sweeper = loop.create_task(self._sweep())
        try:
            await self._nc.publish(
                self._prefix + key, token, reply=self._inbox + reply, headers=_EXPECT_NEW_KEY
            )
            return await future
        except (AttestationError, _Unanswered):
            raise
        except Exception as exc:  # not sent, or sent before the connection dropped: look it up
            raise _Unanswered(f"{type(exc).__name__}: {exc}") from exc
        finally:
            self._pending.pop(reply, None)

    async def _resolve(self, key: str, token: bytes, why: str) -> bool:
        """Whose claim the key holds, asked until the server answers or ``resolve_timeout_s`` passes."""
        assert self._kv is not None
        errors: Any = require("nats.js.errors", extra="nats", feature="JetStreamNonceStore")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._resolve_timeout
        while loop.time() < deadline:
            try:
                entry = await self._kv.get(key)
            except errors.KeyNotFoundError:  # not stored (or not yet seen by the replica that answered)
                try:
                    if await self._create_once(key, token):
                        return True
                except _Unanswered as exc:
                    why = str(exc)
                continue  # it exists now: whose is it?
            except Exception as exc:  # NATS still away
                why = f"{type(exc).__name__}: {exc}"
                await asyncio.sleep(0.2)
                continue
            return entry.value == token
        raise AttestationError(f"nonce store did not answer within {self._resolve_timeout} s ({why})")

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
        """Fail claims older than the timeout as unanswered; runs while any claim is pending."""
        loop = asyncio.get_running_loop()
        while self._pending:
            await asyncio.sleep(min(0.1, self._timeout / 2))
            now = loop.time()
            for deadline, future in list(self._pending.values()):
                if deadline <= now and not future.done():
                    future.set_exception(_Unanswered(f"no answer within {self._timeout} s"))
