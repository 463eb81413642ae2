"""JetStreamNonceStore against a real NATS with JetStream (bucket-level TTL, atomic create across connections).

Runs on whatever server the harness gives (NATS_URL, e.g. Debian's 2.9.10, or the pip 2.15 binary): nothing
here relies on per-key TTL, which 2.9 silently ignores.
"""

import asyncio
import time

import nats
import pytest

from stockade.guardrails.errors import AttestationError, ConfigError
from stockade.guardrails.trust import AttestationVerifier, JetStreamNonceStore, KeyRing, RejectionReason

pytestmark = pytest.mark.nats


async def _connect(url: str):
    return await nats.connect(url, connect_timeout=5, max_reconnect_attempts=2)


async def test_claim_is_atomic_across_connections(nats_url, unique_name):
    bucket = unique_name("nonces")
    conns = [await _connect(nats_url) for _ in range(3)]
    try:
        stores = [
            await JetStreamNonceStore.open(nc.jetstream(), bucket, retention_s=30, memory=True)
            for nc in conns
        ]
        results = await asyncio.gather(
            *(stores[i % 3].claim("planner.abc123", time.time() + 30) for i in range(12))
        )
        assert sorted(results) == [False] * 11 + [True]
        assert await stores[0].claim("planner.other", time.time() + 30)
        await conns[0].jetstream().delete_key_value(bucket)
    finally:
        for nc in conns:
            await nc.close()


async def test_entries_expire_with_the_bucket_ttl(nats_url, unique_name):
    bucket = unique_name("nonces")
    nc = await _connect(nats_url)
    try:
        store = await JetStreamNonceStore.open(nc.jetstream(), bucket, retention_s=1.0, memory=True)
        assert await store.claim("a.n1", 0)
        assert not await store.claim("a.n1", 0)
        deadline = time.monotonic() + 8
        while not await store.claim("a.n1", 0):
            assert time.monotonic() < deadline, "nonce never expired: bucket TTL not applied"
            await asyncio.sleep(0.25)
        await nc.jetstream().delete_key_value(bucket)
    finally:
        await nc.close()


async def test_existing_bucket_with_short_ttl_is_refused(nats_url, unique_name):
    bucket = unique_name("nonces")
    nc = await _connect(nats_url)
    try:
        await JetStreamNonceStore.open(nc.jetstream(), bucket, retention_s=5, memory=True)
        with pytest.raises(ConfigError, match="at least the nonce retention"):
            await JetStreamNonceStore.open(nc.jetstream(), bucket, retention_s=70)
        await nc.jetstream().delete_key_value(bucket)
    finally:
        await nc.close()


async def test_two_verifiers_racing_on_one_envelope_accept_it_once(nats_url, unique_name):
    bucket = unique_name("nonces")
    keys = KeyRing({"planner": {"k1": b"p" * 32}})
    a, b = await _connect(nats_url), await _connect(nats_url)
    try:
        va = AttestationVerifier(keys, await JetStreamNonceStore.open(a.jetstream(), bucket, retention_s=70))
        vb = AttestationVerifier(keys, await JetStreamNonceStore.open(b.jetstream(), bucket, retention_s=70))
        for _ in range(5):
            env = va.sign("planner", "executor", b"payload")
            ra, rb = await asyncio.gather(va.verify(env, b"payload"), vb.verify(env, b"payload"))
            assert sorted([ra.passed, rb.passed]) == [False, True]
            assert RejectionReason.REPLAY in (ra.reason, rb.reason)
        await a.jetstream().delete_key_value(bucket)
    finally:
        await a.close()
        await b.close()


async def test_pipelined_claims_are_atomic_across_connections_and_replays_are_refused(nats_url, unique_name):
    bucket = unique_name("nonces")
    a, b = await _connect(nats_url), await _connect(nats_url)
    try:
        sa = await JetStreamNonceStore.open(a.jetstream(), bucket, retention_s=30, memory=True, client=a)
        sb = await JetStreamNonceStore.open(b.jetstream(), bucket, retention_s=30, memory=True, client=b)
        keys = [f"planner.{i:032x}" for i in range(200)]
        # Every key claimed by both connections at the same moment, all claims in flight together.
        results = await asyncio.gather(*(s.claim(k, time.time() + 30) for k in keys for s in (sa, sb)))
        pairs = list(zip(results[::2], results[1::2], strict=True))
        assert all(sorted(pair) == [False, True] for pair in pairs)
        assert not any(await asyncio.gather(*(sa.claim(k, time.time() + 30) for k in keys[:20])))
        await a.jetstream().delete_key_value(bucket)
    finally:
        await a.close()
        await b.close()


async def test_pipelined_claim_fails_closed_when_the_bucket_is_gone(nats_url, unique_name):
    bucket = unique_name("nonces")
    nc = await _connect(nats_url)
    try:
        store = await JetStreamNonceStore.open(nc.jetstream(), bucket, retention_s=30, memory=True, client=nc)
        assert await store.claim("planner." + "0" * 32, time.time() + 30)
        await nc.jetstream().delete_key_value(bucket)  # no stream answers any more
        with pytest.raises(AttestationError, match="nonce store unavailable"):
            await store.claim("planner." + "1" * 32, time.time() + 30)
    finally:
        await nc.close()


async def test_a_claim_unanswered_across_a_server_restart_is_looked_up_not_lost(nats_server_factory):
    """The server dies with a claim in flight: the claim is not answered within its timeout, so its outcome is
    looked up once the server is back. The key holds this claim's token: claimed (before, the claim failed as
    "unavailable" and the sender's retry was refused as a replay, so the message was lost). A replay is still
    refused."""
    server = nats_server_factory()
    nc = await nats.connect(server.url, max_reconnect_attempts=-1, reconnect_time_wait=0.1)
    try:
        store = await JetStreamNonceStore.open(
            nc.jetstream(), "nonces", retention_s=30, client=nc, timeout_s=0.2, resolve_timeout_s=20
        )
        assert await store.claim("planner." + "0" * 32, time.time() + 30)
        await asyncio.to_thread(server.kill)
        claim = asyncio.create_task(store.claim("planner." + "1" * 32, time.time() + 30))
        await asyncio.sleep(1.0)  # well past the claim's timeout
        assert not claim.done()
        await asyncio.to_thread(server.restart)
        assert await asyncio.wait_for(claim, timeout=20) is True
        assert await store.claim("planner." + "1" * 32, time.time() + 30) is False  # replay
        assert await store.claim("planner." + "0" * 32, time.time() + 30) is False  # survived the kill
    finally:
        await nc.close()
