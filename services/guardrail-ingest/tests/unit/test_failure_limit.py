"""The per-client failure budget and the refused-key cache stay bounded; the budget refills; IPv6 by /64.

Their behaviour over HTTP, with model-api on a real NATS server: tests/e2e/test_ingest_keys.py."""

from __future__ import annotations

import pytest

from stockade.guardrail_ingest import failure_limit
from stockade.guardrail_ingest.failure_limit import FailureLimiter, client_key
from stockade.guardrail_ingest.ingest_keys import IngestKeyVerifier, KeyRejected
from stockade.guardrail_ingest.settings import IngestSettings


def test_clients_are_counted_by_address_and_ipv6_by_its_64() -> None:
    assert client_key("198.51.100.7") == "198.51.100.7"
    assert client_key("2001:db8:1:2:aaaa::1") == client_key("2001:db8:1:2:ffff::9") == "2001:db8:1:2::/64"
    assert client_key("2001:db8:1:3::1") != client_key("2001:db8:1:2::1")
    assert client_key("::ffff:198.51.100.7") == "198.51.100.7"
    assert client_key(None) == client_key("") == "unknown"


def test_a_budget_is_used_up_then_refills(monkeypatch: pytest.MonkeyPatch) -> None:
    # A fake clock: with the real one a stall between two takes (a loaded CI machine) refills a token early.
    now = [1000.0]
    monkeypatch.setattr(failure_limit.time, "monotonic", lambda: now[0])
    limiter = FailureLimiter(burst=2, window_s=0.2, max_clients=10)
    assert limiter.take("a") == 0.0 and limiter.take("a") == 0.0
    wait = limiter.take("a")
    assert wait == pytest.approx(0.1) and limiter.retry_after_s(wait) == 1
    assert limiter.take("b") == 0.0  # another client has its own
    now[0] += 0.05
    assert limiter.take("a") == pytest.approx(0.05)  # half refilled: not yet
    now[0] += 0.06
    assert limiter.take("a") == 0.0


def test_a_token_given_back_is_no_failure_and_a_full_bucket_is_not_kept() -> None:
    limiter = FailureLimiter(burst=1, window_s=60, max_clients=10)
    assert limiter.take("a") == 0.0
    limiter.give_back("a")
    assert len(limiter) == 0
    assert limiter.take("a") == 0.0 and limiter.take("a") > 0


def test_the_client_table_is_bounded() -> None:
    limiter = FailureLimiter(burst=1, window_s=3600, max_clients=100)
    for i in range(1000):
        limiter.take(f"10.0.{i // 256}.{i % 256}")
    assert len(limiter) == 100
    assert limiter.take("10.0.3.231") > 0  # the latest are kept, the oldest forgotten


async def test_the_refused_key_cache_is_bounded() -> None:
    verifier = IngestKeyVerifier(IngestSettings(key_refused_cache_size=50))
    for i in range(500):
        verifier._remember_refused(f"{i:064x}", f"key{i:09d}", "unknown key")
    assert len(verifier._refused) == 50
    verifier.forget("key000000499")
    assert len(verifier._refused) == 49


@pytest.mark.parametrize("presented", [None, "x", "stk_" + "A" * 50])
async def test_without_a_client_address_there_is_no_budget(presented: str | None) -> None:
    verifier = IngestKeyVerifier(IngestSettings(key_failures_per_client=1, key_verify_timeout_s=0.1))
    for _ in range(3):
        with pytest.raises(Exception) as raised:
            await verifier.verify(presented)
        assert raised.type.__name__ in {KeyRejected.__name__, "VerifierUnavailable"}
