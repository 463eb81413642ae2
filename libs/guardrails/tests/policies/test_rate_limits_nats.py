"""Rate limits on the NATS JetStream KV backend, against a real NATS server: shared, atomic counters."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import nats
import pytest
from nats.js.kv import KeyValue

from stockade.guardrails.policies import (
    NatsBackendConfig,
    NatsKVCounterStore,
    PoliciesConfig,
    PolicyEngine,
    RateLimiter,
    RateLimitsConfig,
)

pytestmark = pytest.mark.nats

# What these tests check is sharing and atomicity, not the 2 s default bound of each store call (the outage
# tests do): a loaded machine, with every worker retrying its compare-and-set, must not turn into a failure.
LOADED_MACHINE_TIMEOUT_S = 20.0


@pytest.fixture
async def bucket(nats_url: str) -> AsyncIterator[str]:
    name = f"rl_{uuid.uuid4().hex[:12]}"
    yield name
    nc = await nats.connect(nats_url)
    try:
        await nc.jetstream().delete_key_value(name)
    finally:
        await nc.close()


async def _worker_store(nats_url: str, bucket: str) -> tuple[nats.NATS, NatsKVCounterStore]:
    nc = await nats.connect(nats_url)
    kv: KeyValue = await NatsKVCounterStore.open_bucket(nc.jetstream(), bucket, ttl_seconds=600)
    return nc, NatsKVCounterStore(kv, timeout_seconds=LOADED_MACHINE_TIMEOUT_S)


async def test_concurrent_workers_lose_no_increments(nats_url: str, bucket: str) -> None:
    workers = [await _worker_store(nats_url, bucket) for _ in range(6)]
    try:

        async def bump(store: NatsKVCounterStore) -> None:
            for _ in range(15):
                await store.add("requests:session/α 1", 1)

        await asyncio.gather(*(bump(s) for _, s in workers))
        assert await workers[0][1].get("requests:session/α 1") == 6 * 15
    finally:
        for nc, _ in workers:
            await nc.close()


async def test_concurrent_workers_share_one_quota_exactly(nats_url: str, bucket: str) -> None:
    workers = [await _worker_store(nats_url, bucket) for _ in range(5)]
    config = RateLimitsConfig(requests_per_session=25)
    limiters = [RateLimiter(config, store=store) for _, store in workers]
    try:

        async def hammer(limiter: RateLimiter) -> int:
            return sum([(await limiter.before_request("shared")).passed for _ in range(10)])

        allowed = await asyncio.gather(*(hammer(lim) for lim in limiters))
        assert sum(allowed) == 25
        assert await workers[0][1].get("requests:shared") == 25
    finally:
        for nc, _ in workers:
            await nc.close()


async def test_engine_from_config_connects_and_enforces_tool_limits(nats_url: str, bucket: str) -> None:
    config = PoliciesConfig(
        rate_limits=RateLimitsConfig(
            tool_calls_per_session=2,
            tool_execution_seconds=2.0,
            backend="nats",
            nats=NatsBackendConfig(url=nats_url, bucket=bucket, timeout_seconds=LOADED_MACHINE_TIMEOUT_S),
        )
    )
    first, second = PolicyEngine(config), PolicyEngine(config)  # two "processes" sharing the session
    try:
        assert (await first.check_tool_call_limit("s1")).passed
        await first.tool_call_finished(first.tool_call_started("s1", "t"), duration_seconds=1.5)
        assert (await second.check_tool_call_limit("s1")).passed
        assert (await second.check_tool_call_limit("s1")).error == "tool_call_quota_exceeded"
        await second.tool_call_finished(second.tool_call_started("s2", "t"), duration_seconds=2.5)
        assert (await first.check_tool_call_limit("s2")).error == "tool_time_exceeded"
        assert (await first.rate_limiter.usage("s1"))["tool_execution_seconds"] == 1.5
    finally:
        await first.close()
        await second.close()


async def test_unreachable_nats_is_an_infrastructure_error() -> None:
    from stockade.guardrails import CheckUnavailableError

    store = NatsKVCounterStore(url="nats://127.0.0.1:1", max_reconnect_attempts=1, reconnect_wait_seconds=0.1)
    with pytest.raises(CheckUnavailableError, match="unavailable"):
        await store.add("k", 1)


WORKER = """
import asyncio, sys
from stockade.guardrails.policies import NatsBackendConfig, PoliciesConfig, PolicyEngine, RateLimitsConfig

async def main(url, bucket):
    cfg = PoliciesConfig(rate_limits=RateLimitsConfig(
        requests_per_session=40, backend="nats",
        nats=NatsBackendConfig(url=url, bucket=bucket, timeout_seconds=float(sys.argv[3]))))
    engine = PolicyEngine(cfg)
    passed = 0
    for _ in range(20):
        passed += (await engine.before_request("multi-process")).passed
    await engine.close()
    print(passed)

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


async def test_separate_processes_share_one_session_quota(nats_url: str, bucket: str) -> None:
    import sys

    procs = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            WORKER,
            nats_url,
            bucket,
            str(LOADED_MACHINE_TIMEOUT_S),
            stdout=asyncio.subprocess.PIPE,
        )
        for _ in range(3)
    ]
    outputs = [await p.communicate() for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert sum(int(out.decode()) for out, _ in outputs) == 40  # 60 attempts, quota 40, none lost or doubled
    store = NatsKVCounterStore(url=nats_url, bucket=bucket, timeout_seconds=LOADED_MACHINE_TIMEOUT_S)
    try:
        assert await store.get("requests:multi-process") == 40
    finally:
        await store.close()


async def test_store_errors_never_show_url_credentials() -> None:
    from stockade.guardrails import CheckUnavailableError

    store = NatsKVCounterStore(
        url="nats://svc:hunter2@127.0.0.1:1", max_reconnect_attempts=1, reconnect_wait_seconds=0.1
    )
    with pytest.raises(CheckUnavailableError) as info:
        await store.add("k", 1)
    assert "hunter2" not in str(info.value) and "***@127.0.0.1:1" in str(info.value)
