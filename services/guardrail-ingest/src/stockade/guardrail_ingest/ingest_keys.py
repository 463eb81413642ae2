"""Per-project ingest keys: who may send run events, and for which project (README, "Ingest keys").

guardrail-ingest has no database. A presented key is hashed (SHA-256, the form the key owner stores) and the
key owner, model-api, is asked on ``apikey.cmd.verify_ingest.v1``; the plaintext never goes on the bus. A valid
answer is cached for ``ingest.key_cache_s`` (the hot path is one dict look-up) and dropped at once when
``apikey.revoked.v1`` names the key, so a revocation in the console stops the key within the event's delivery
time (after a NATS reconnection, when an event may have been missed, the cache starts empty). Invalid answers
are not cached (a key created a moment ago works at once). Concurrent requests with the
same uncached key share one question. When model-api does not answer, the request fails closed
(:class:`VerifierUnavailable`, 503; the library retries).

``ingest.api_key``, when set, is a deployment-wide key for tests and single-host development: it is accepted for
every project, compared in constant time, and never asked about.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import time
from dataclasses import dataclass

from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from pydantic import ValidationError

from stockade.contracts import ApiKeyRevoked, IngestKeyQuery, IngestKeyVerdict, subjects
from stockade.guardrail_ingest.settings import IngestSettings

log = logging.getLogger(__name__)

# The API key format of stockade.identity (stk_ + 12-character key id + secret + checksum, 54 base62
# characters); anything else is refused here without a question on the bus.
_PREFIX, _ID_LEN, _KEY_LEN = "stk_", 12, 54
_CACHE_PRUNE_AT = 4096


class KeyRejected(Exception):
    """No key, or not a valid ingest key (401)."""


class VerifierUnavailable(Exception):
    """The key owner did not answer: nothing is accepted (503, retry later)."""


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
    """Verifies ingest keys through model-api, with a positive cache invalidated by revocations."""

    def __init__(self, settings: IngestSettings, nc: Client | None = None) -> None:
        self.settings = settings
        self.nc = nc
        self._cache: dict[str, tuple[IngestPrincipal, float]] = {}  # key hash -> (principal, expiry)
        self._asking: dict[str, asyncio.Future[IngestPrincipal]] = {}
        self._revoked: dict[str, float] = {}  # key id -> when its revocation arrived (an answer racing it)
        self._reconnects = 0  # NATS reconnections seen: a revocation event may have been missed during one
        self._sub: Subscription | None = None

    async def start(self, nc: Client) -> None:
        """Follow ``apikey.revoked.v1`` (a plain subscription: a revocation must reach every replica)."""
        self.nc = nc
        self._sub = await nc.subscribe(subjects.APIKEY_REVOKED, cb=self._on_revoked)

    async def stop(self) -> None:
        if self._sub is not None:
            await self._sub.unsubscribe()
            self._sub = None

    async def _on_revoked(self, msg: Msg) -> None:
        try:
            event = ApiKeyRevoked.model_validate_json(msg.data)
        except ValidationError:
            log.warning("ignored a malformed %s", subjects.APIKEY_REVOKED)
            return
        self.forget(event.key_id)

    def forget(self, key_id: str) -> None:
        """Drop every cached answer for ``key_id`` (its next request asks model-api again)."""
        now = time.monotonic()
        self._revoked = {k: t for k, t in self._revoked.items() if now - t < 60.0}
        self._revoked[key_id] = now
        for digest in [d for d, (p, _) in self._cache.items() if p.key_id == key_id]:
            self._cache.pop(digest, None)

    async def verify(self, presented: str | None) -> IngestPrincipal:
        """The principal of ``presented`` (the X-API-Key header); raises KeyRejected or VerifierUnavailable."""
        if not presented:
            raise KeyRejected("missing X-API-Key: send a per-project ingest key")
        wide = self.settings.api_key
        if wide and hmac.compare_digest(presented.encode(), wide.encode()):
            return ANY_PROJECT
        key_id = _key_id(presented)
        if key_id is None:
            raise KeyRejected("invalid X-API-Key: not a Stockade key")
        digest = hashlib.sha256(presented.encode()).hexdigest()
        reconnects = self.nc.stats["reconnects"] if self.nc is not None else 0
        if reconnects != self._reconnects:  # revocations may have passed while we were away: ask again
            self._cache.clear()
            self._reconnects = reconnects
        cached = self._cache.get(digest)
        if cached is not None and cached[1] > time.monotonic():
            return cached[0]
        pending = self._asking.get(digest)
        if pending is None:
            pending = asyncio.ensure_future(self._ask(key_id, digest))
            self._asking[digest] = pending
            pending.add_done_callback(lambda _: self._asking.pop(digest, None))
        return await asyncio.shield(pending)

    async def _ask(self, key_id: str, digest: str) -> IngestPrincipal:
        if self.nc is None or not self.nc.is_connected:
            raise VerifierUnavailable("not connected to NATS")
        asked = time.monotonic()
        query = IngestKeyQuery(key_id=key_id, key_hash=digest).model_dump_json().encode()
        try:
            reply = await self.nc.request(
                subjects.APIKEY_CMD_VERIFY_INGEST, query, timeout=self.settings.key_verify_timeout_s
            )
        except Exception as exc:  # timeout, no responders, connection closed: fail closed
            raise VerifierUnavailable(f"model-api did not answer: {type(exc).__name__}") from exc
        try:
            raw = json.loads(reply.data)
            if isinstance(raw, dict) and "error" in raw:
                raise VerifierUnavailable(f"model-api: {raw['error'].get('message', 'error')}")
            verdict = IngestKeyVerdict.model_validate(raw)
        except (ValueError, AttributeError) as exc:
            raise VerifierUnavailable(f"model-api answered something unreadable: {exc}") from exc
        if not verdict.valid or verdict.project_id is None or verdict.key_id != key_id:
            raise KeyRejected(f"invalid X-API-Key: {verdict.reason}")
        if self._revoked.get(key_id, -1.0) >= asked:  # revoked while the answer was on its way
            raise KeyRejected("invalid X-API-Key: the key is revoked")
        principal = IngestPrincipal(key_id=key_id, project_id=verdict.project_id)
        now = time.monotonic()
        if len(self._cache) >= _CACHE_PRUNE_AT:  # only valid keys are cached: expired ones are the garbage
            self._cache = {d: entry for d, entry in self._cache.items() if entry[1] > now}
        self._cache[digest] = (principal, now + self.settings.key_cache_s)
        return principal
