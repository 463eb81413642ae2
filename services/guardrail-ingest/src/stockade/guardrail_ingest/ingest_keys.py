"""Per-project ingest keys: who may send run events, and for which project (README, "Ingest keys").

guardrail-ingest has no database. A presented key is hashed (SHA-256, the form the key owner stores) and the
key owner, model-api, is asked on ``apikey.cmd.verify_ingest.v1``; the plaintext never goes on the bus. A valid
answer is cached for ``ingest.key_cache_s`` (the hot path is one dict look-up) and dropped at once when
``apikey.revoked.v1`` names the key, so a revocation in the console stops the key within the event's delivery
time (after a NATS reconnection, when an event may have been missed, the cache starts empty). An invalid answer
is cached too, briefly (``ingest.key_refused_cache_s``, at most ``ingest.key_refused_cache_size`` key hashes,
dropped on the same events), so a bad key sent again and again is not asked about again; a key created a
moment ago has a hash never asked about, so it works at once. Concurrent requests with the same uncached key
share one question. The revocations are followed by a FastStream subscriber on the service's broker
(:meth:`IngestKeyVerifier.declare`), and the questions go through that broker. When model-api does not answer, the request fails closed (:class:`VerifierUnavailable`,
503; the library retries). Each client has a budget of failed authentications (:mod:`.failure_limit`): past
it, anything not answered by the positive cache is refused with :class:`TooManyFailures` (429, Retry-After).

``ingest.api_key``, when set, is a deployment-wide key for tests and single-host development: it is accepted for
every project, compared in constant time, and never asked about.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import time
from dataclasses import dataclass

from faststream.nats import NatsBroker
from nats.aio.client import Client

from stockade.contracts import ApiKeyRevoked, IngestKeyQuery, IngestKeyVerdict, subjects
from stockade.contracts.replies import ErrorReply
from stockade.guardrail_ingest.failure_limit import FailureLimiter, client_key
from stockade.guardrail_ingest.settings import IngestSettings
from stockade.runtime.bus import on_event

log = logging.getLogger(__name__)

# The API key format of stockade.identity (stk_ + 12-character key id + secret + checksum, 54 base62
# characters); anything else is refused here without a question on the bus.
_PREFIX, _ID_LEN, _KEY_LEN = "stk_", 12, 54
_CACHE_PRUNE_AT = 4096


class KeyRejected(Exception):
    """No key, or not a valid ingest key (401)."""


class VerifierUnavailable(Exception):
    """The key owner did not answer: nothing is accepted (503, retry later)."""


class TooManyFailures(Exception):
    """The client used up its budget of failed authentications (429 with Retry-After)."""

    def __init__(self, retry_after_s: int) -> None:
        super().__init__(
            f"too many failed ingest-key authentications from this address; retry in {retry_after_s} s"
        )
        self.retry_after_s = retry_after_s


@dataclass(frozen=True, slots=True)
class IngestPrincipal:
    """An accepted key: the project it sends for (None: the deployment-wide key, every project)."""

    key_id: str
    project_id: str | None


ANY_PROJECT = IngestPrincipal(key_id="deployment", project_id=None)


def _key_id(plaintext: str) -> str | None:
    if len(plaintext) != _KEY_LEN or not plaintext.startswith(_PREFIX) or not plaintext[4:].isalnum():
        return None
    return plaintext[len(_PREFIX) : len(_PREFIX) + _ID_LEN] if plaintext.isascii() else None


class IngestKeyVerifier:
    """Verifies ingest keys through model-api, with a positive cache invalidated by revocations, a short
    negative cache, and a per-client budget of failures."""

    def __init__(self, settings: IngestSettings) -> None:
        self.settings = settings
        self.broker: NatsBroker | None = None  # asks model-api through it (None: fails closed)
        self.nc: Client | None = None  # the broker's nats-py connection: is it up, how often it reconnected
        self._cache: dict[str, tuple[IngestPrincipal, float]] = {}  # key hash -> (principal, expiry)
        self._refused: dict[str, tuple[str, str, float]] = {}  # key hash -> (key id, reason, expiry)
        self.failures = (
            FailureLimiter(
                settings.key_failures_per_client, settings.key_failure_window_s, settings.key_failure_clients
            )
            if settings.key_failures_per_client
            else None
        )
        self._asking: dict[str, asyncio.Future[IngestPrincipal]] = {}
        self._revoked: dict[str, float] = {}  # key id -> when its revocation arrived (an answer racing it)
        self._reconnects = 0  # NATS reconnections seen: a revocation event may have been missed during one

    def declare(self, broker: NatsBroker, nc: Client | None = None) -> None:
        """Follow ``apikey.revoked.v1`` on ``broker`` (a plain subscriber, no queue group: a revocation must reach
        every replica; it starts with the broker) and ask model-api through it. ``nc`` is the broker's nats-py
        connection (None on FastStream's TestNatsBroker): after each of its reconnections the caches start
        empty, and while it is down no question is asked (503)."""
        self.broker, self.nc = broker, nc

        on_event(
            broker,
            subjects.APIKEY_REVOKED,
            ApiKeyRevoked,
            self.on_revoked,
            title="guardrail-ingest key revocations",
        )

    async def on_revoked(self, event: ApiKeyRevoked) -> None:
        self.forget(event.key_id)

    def forget(self, key_id: str) -> None:
        """Drop every cached answer for ``key_id`` (its next request asks model-api again)."""
        now = time.monotonic()
        self._revoked = {k: t for k, t in self._revoked.items() if now - t < 60.0}
        self._revoked[key_id] = now
        for digest in [d for d, (p, _) in self._cache.items() if p.key_id == key_id]:
            self._cache.pop(digest, None)
        for digest in [d for d, (k, _, _) in self._refused.items() if k == key_id]:
            self._refused.pop(digest, None)

    async def verify(self, presented: str | None, client: str | None = None) -> IngestPrincipal:
        """The principal of ``presented`` (the X-API-Key header) sent from address ``client`` (None: no failure
        budget); raises KeyRejected, VerifierUnavailable or TooManyFailures."""
        wide = self.settings.api_key
        if presented and wide and hmac.compare_digest(presented.encode(), wide.encode()):
            return ANY_PROJECT
        key_id = _key_id(presented) if presented else None
        digest = hashlib.sha256(presented.encode()).hexdigest() if presented and key_id else ""
        reconnects = self.nc.stats["reconnects"] if self.nc is not None else 0
        if reconnects != self._reconnects:  # revocations may have passed while we were away: ask again
            self._cache.clear()
            self._refused.clear()
            self._reconnects = reconnects
        cached = self._cache.get(digest)
        if cached is not None and cached[1] > time.monotonic():
            return cached[0]  # the hot path: no budget taken
        # Anything else may fail: take one failure from the client's budget first (so concurrent attempts
        # cannot overdraw it while their questions are on the bus) and give it back if the key is good.
        bucket = client_key(client) if self.failures is not None and client is not None else None
        if bucket is not None and self.failures is not None:
            wait = self.failures.take(bucket)
            if wait:
                raise TooManyFailures(self.failures.retry_after_s(wait))
        try:
            principal = await self._check(presented, key_id, digest)
        except KeyRejected:
            raise  # the failure stays counted
        except BaseException:  # could not be checked (or cancelled): not the client's failure
            self._give_back(bucket)
            raise
        self._give_back(bucket)
        return principal

    def _give_back(self, bucket: str | None) -> None:
        if bucket is not None and self.failures is not None:
            self.failures.give_back(bucket)

    async def _check(self, presented: str | None, key_id: str | None, digest: str) -> IngestPrincipal:
        if not presented:
            raise KeyRejected("missing X-API-Key: send a per-project ingest key")
        if key_id is None:
            raise KeyRejected("invalid X-API-Key: not a Stockade key")
        refused = self._refused.get(digest)
        if refused is not None:
            if refused[2] > time.monotonic():
                raise KeyRejected(f"invalid X-API-Key: {refused[1]}")
            self._refused.pop(digest, None)
        pending = self._asking.get(digest)
        if pending is None:
            pending = asyncio.ensure_future(self._ask(key_id, digest))
            self._asking[digest] = pending
            pending.add_done_callback(lambda _: self._asking.pop(digest, None))
        return await asyncio.shield(pending)

    async def _ask(self, key_id: str, digest: str) -> IngestPrincipal:
        if self.broker is None or (self.nc is not None and not self.nc.is_connected):
            raise VerifierUnavailable("not connected to NATS")
        asked = time.monotonic()
        query = IngestKeyQuery(key_id=key_id, key_hash=digest).model_dump_json().encode()
        try:
            reply = await self.broker.request(
                query, subjects.APIKEY_CMD_VERIFY_INGEST, timeout=self.settings.key_verify_timeout_s
            )
            body = bytes(reply.body)
        except Exception as exc:  # timeout, no responders, connection closed: fail closed
            raise VerifierUnavailable(f"model-api did not answer: {type(exc).__name__}") from exc
        error = ErrorReply.parse(body)
        if error is not None:
            raise VerifierUnavailable(f"model-api: {error.error.message}")
        try:
            verdict = IngestKeyVerdict.model_validate_json(body)
        except ValueError as exc:
            raise VerifierUnavailable(f"model-api answered something unreadable: {exc}") from exc
        if not verdict.valid or verdict.project_id is None or verdict.key_id != key_id:
            self._remember_refused(digest, key_id, verdict.reason)
            raise KeyRejected(f"invalid X-API-Key: {verdict.reason}")
        if self._revoked.get(key_id, -1.0) >= asked:  # revoked while the answer was on its way
            raise KeyRejected("invalid X-API-Key: the key is revoked")
        principal = IngestPrincipal(key_id=key_id, project_id=verdict.project_id)
        now = time.monotonic()
        if len(self._cache) >= _CACHE_PRUNE_AT:  # only valid keys are cached: expired ones are the garbage
            self._cache = {d: entry for d, entry in self._cache.items() if entry[1] > now}
        self._cache[digest] = (principal, now + self.settings.key_cache_s)
        return principal

    def _remember_refused(self, digest: str, key_id: str, reason: str) -> None:
        """Cache a refusal briefly (bounded: expired entries go first, then the oldest)."""
        ttl, size = self.settings.key_refused_cache_s, self.settings.key_refused_cache_size
        if ttl <= 0 or size <= 0:
            return
        now = time.monotonic()
        self._refused.pop(digest, None)
        if len(self._refused) >= size:
            self._refused = {d: entry for d, entry in self._refused.items() if entry[2] > now}
            excess = len(self._refused) - size + 1
            for old in list(self._refused)[: max(0, excess)]:  # still full: the oldest go
                del self._refused[old]
        self._refused[digest] = (key_id, reason, now + ttl)
