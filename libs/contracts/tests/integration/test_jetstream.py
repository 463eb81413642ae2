"""stockade.contracts.jetstream on a real nats-server: new streams get their limits, a stream made by an older
release without limits gets the missing ones, and an operator's own values are kept; buckets get theirs."""

import nats
import pytest
from nats.js.api import DiscardPolicy, RetentionPolicy, StreamConfig

from stockade.contracts.jetstream import StreamLimitError, ensure_bucket, ensure_stream
from stockade.contracts.limits import STREAM_LIMITS, StreamLimits
from stockade.contracts.streams import BUCKETS, STREAM_SPECS, StreamSpec
from stockade.contracts.subjects import KV_RATE_LIMITS

pytestmark = pytest.mark.nats


async def test_new_and_old_streams_end_with_byte_and_age_limits(nats_server_factory):
    nc = await nats.connect(nats_server_factory().url)
    try:
        js = nc.jetstream()
        created = await ensure_stream(js, STREAM_SPECS["PROMPTS"])
        expected = STREAM_LIMITS["PROMPTS"]
        assert created.config.max_bytes == expected.max_bytes and created.config.max_age == expected.max_age_s
        assert created.config.discard == DiscardPolicy.OLD

        await js.add_stream(StreamConfig(name="OLDER", subjects=["older.v1"]))  # an older release: no limits
        filled = await ensure_stream(
            js, StreamSpec("OLDER", ("older.v1",), StreamLimits(1_000_000, 3600.0, "new"))
        )
        assert (filled.config.max_bytes, filled.config.max_age) == (1_000_000, 3600.0)
        assert (await js.stream_info("OLDER")).config.max_bytes == 1_000_000

        await js.add_stream(StreamConfig(name="TUNED", subjects=["tuned.v1"], max_bytes=5_000_000))
        kept = await ensure_stream(
            js, StreamSpec("TUNED", ("tuned.v1",), StreamLimits(1_000_000, 3600.0, "new"))
        )
        assert (kept.config.max_bytes, kept.config.max_age) == (5_000_000, 3600.0)  # operator's bytes kept
    finally:
        await nc.close()


async def test_a_store_too_small_for_the_limits_says_which_setting_to_change(nats_server_factory):
    server = nats_server_factory('jetstream { store_dir: "{store_dir}", max_file_store: 10MB }')
    nc = await nats.connect(server.url)
    try:
        with pytest.raises(StreamLimitError, match="cannot reserve 67108864 bytes for stream PROMPTS"):
            await ensure_stream(nc.jetstream(), STREAM_SPECS["PROMPTS"])
    finally:
        await nc.close()


async def test_work_queue_stream_and_bucket_as_specified(nats_server_factory):
    nc = await nats.connect(nats_server_factory().url)
    try:
        js = nc.jetstream()
        events = await ensure_stream(js, STREAM_SPECS["GUARDRAIL_EVENTS"], replicas=1)
        assert events.config.retention == RetentionPolicy.WORK_QUEUE
        assert events.config.duplicate_window == STREAM_SPECS["GUARDRAIL_EVENTS"].duplicate_window_s

        kv = await ensure_bucket(js, BUCKETS[KV_RATE_LIMITS], ttl_s=600.0)
        again = await ensure_bucket(
            js, BUCKETS[KV_RATE_LIMITS], ttl_s=1.0
        )  # an existing bucket is kept as it is
        status = await again.status()
        assert (status.bucket, status.ttl) == (KV_RATE_LIMITS, 600.0)
        info = await js.stream_info(f"KV_{KV_RATE_LIMITS}")
        assert (
            info.config.max_bytes == BUCKETS[KV_RATE_LIMITS].max_bytes
            and info.config.max_msgs_per_subject == 1
        )
        await kv.put("k", b"v")
    finally:
        await nc.close()
