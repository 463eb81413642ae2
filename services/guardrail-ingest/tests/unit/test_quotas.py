"""The quota arithmetic of guardrail-ingest (quotas.py) on a clock the test moves."""

from __future__ import annotations

import pytest

from stockade.guardrail_ingest.quotas import (
    BytesInFlight,
    EventRate,
    IngestQuotas,
    QuotaExceeded,
    QuotaSettings,
)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_bucket_refills_at_its_rate_and_says_how_long_to_wait() -> None:
    clock = Clock()
    rate = EventRate(10, 50, tracked=10, clock=clock)
    assert rate.wait_s("k", 50) == 0
    rate.take("k", 50)
    assert rate.wait_s("k", 20) == pytest.approx(2.0)
    clock.now += 1.0
    assert rate.wait_s("k", 20) == pytest.approx(1.0)
    clock.now += 10.0  # never above the burst
    assert (
        rate.wait_s("k", 50) == 0 and rate.wait_s("k", 51) == 0
    )  # a batch over the burst fits a full bucket
    assert rate.wait_s("other", 50) == 0  # buckets are per name


def test_tracking_is_bounded_and_forgets_idle_senders_first() -> None:
    clock = Clock()
    rate = EventRate(1, 10, tracked=2, clock=clock)
    rate.take("busy", 10)
    rate.take("idle", 0)
    rate.take("new", 1)
    assert set(rate._buckets) == {"busy", "new"}  # the idle (full) bucket went, the busy one is kept


def test_bytes_in_flight_refuse_a_second_request_over_the_limit_and_come_back() -> None:
    flight = BytesInFlight(100)
    assert flight.reserve("k", 150)  # alone: passes even over the limit (the body cap bounds it)
    assert not flight.reserve("k", 1)
    flight.release("k", 150)
    assert flight.reserve("k", 60) and flight.reserve("k", 40) and not flight.reserve("k", 1)
    assert BytesInFlight(0).reserve("k", 10**9)  # 0: off


def test_ingest_quotas_take_from_neither_bucket_when_one_refuses() -> None:
    clock = Clock()
    settings = QuotaSettings(
        key_events_per_s=10, key_events_burst=100, project_events_per_s=1, project_events_burst=20
    )
    quotas = IngestQuotas(settings, clock=clock)
    quotas.take_events("key-1", "p", 20)
    with pytest.raises(QuotaExceeded, match="project p") as refused:
        quotas.take_events("key-1", "p", 10)
    assert refused.value.retry_after_s == 10
    assert quotas.key_rate.wait_s("key-1", 80) == 0  # the key's bucket kept its 80 tokens
    quotas.take_events("key-2", "q", 20)  # another project is not affected


def test_a_project_bytes_refusal_gives_the_keys_bytes_back() -> None:
    quotas = IngestQuotas(QuotaSettings(key_bytes_in_flight=1000, project_bytes_in_flight=100))
    quotas.reserve_bytes("key-1", "p", 100)
    with pytest.raises(QuotaExceeded, match="project p"):
        quotas.reserve_bytes("key-2", "p", 50)
    assert quotas.key_bytes.used("key-2") == 0
    quotas.release_bytes("key-1", "p", 100)
    quotas.reserve_bytes("key-2", "p", 50)
