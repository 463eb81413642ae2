"""Benchmark of the policy checks and LLMRails overhead (issue 5). Not a test: run it by hand.

    .venv/bin/python bench/policy_overhead.py [--calls 20000] [--generate-calls 5000]

Measures per-call latency (p50, p99) in one process, in one run:

1. bare provider call: ``await FakeModelProvider.acomplete(request)``, a zero-latency fake model (the baseline);
2. token budget: ``PolicyEngine.check_token_budget()`` over a realistic request (system prompt, a 6-message
   conversation, 2 tool definitions), tiktoken o200k_base, an event recorded per call;
3. tool authorization: ``before_tool_call()`` for an allowlisted tool, and for a sensitive tool with a valid
   approval (argument hash compared);
4. rate limit, in-memory backend: ``before_request()``, and ``check_tool_call_limit()`` plus
   ``tool_call_started()``/``tool_call_finished()``;
5. ``LLMRails.agenerate()`` around the same fake provider with policy checks only (no content checks):
   its overhead is generate minus the bare call.

Goals (issue 5): each policy check <= 0.1 ms p50; generate() overhead <= 2 ms p50. Every number is also
printed as a ratio against the bare provider call measured in this run.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import time
from collections.abc import Awaitable, Callable

from stockade.guardrails.events import ListRecorder
from stockade.guardrails.llm.rails import LLMRails
from stockade.guardrails.messages import ChatMessage, ChatRequest, ToolDefinition
from stockade.guardrails.policies import Approval, PoliciesConfig, PolicyEngine
from stockade.guardrails.system import GuardrailSystem
from stockade.guardrails.testing import FakeModelProvider

POLICIES = {
    "token_budget": {"per_request": 8000, "per_run": 10_000_000},
    "tools": {
        "roles": {"analyst": ["search", "db.read_*", "transfer_funds"]},
        "deny": ["shell", "db.drop_*"],
        "sensitive": {"transfer_funds": {"approvers": ["alice"], "max_age_seconds": 3600}},
    },
    "rate_limits": {
        "requests_per_session": 10_000_000,
        "tool_calls_per_session": 10_000_000,
        "tool_execution_seconds": 1e9,
    },
}
NO_CHECKS = {n: {"enabled": False} for n in ("pii", "exfiltration", "classification")}


def _request() -> ChatRequest:
    turns = [
        ("user", "Find the three largest customers in the EMEA region by revenue last quarter."),
        ("assistant", "I will query the sales database for EMEA customers ordered by Q3 revenue."),
        ("user", "Also include their account managers and the renewal dates, please."),
        ("assistant", "Sure. Querying accounts joined with managers and contract renewal dates now."),
        ("user", "Format the answer as a short table with one row per customer."),
        ("assistant", "Here is the table you asked for, with revenue rounded to thousands."),
    ]
    return ChatRequest(
        system="You are a careful analytics assistant. Answer from tool results only; never invent numbers. "
        "Refuse requests for personal data. Keep answers under 200 words.",
        messages=[ChatMessage(role=r, content=c) for r, c in turns],  # type: ignore[arg-type]
        tools=[
            ToolDefinition(
                name="search",
                description="Full-text search over the sales wiki.",
                parameters={"type": "object", "properties": {"query": {"type": "string"}}},
            ),
            ToolDefinition(
                name="db.read_sales",
                description="Run a read-only SQL query on the sales DB.",
                parameters={"type": "object", "properties": {"sql": {"type": "string"}}},
            ),
        ],
    )


async def _measure(fn: Callable[[], Awaitable[object]], calls: int) -> list[float]:
    for _ in range(min(500, calls)):  # warm up
        await fn()
    gc.collect()
    samples = []
    for _ in range(calls):
        t0 = time.perf_counter_ns()
        await fn()
        samples.append((time.perf_counter_ns() - t0) / 1e6)
    return samples


def _sync(fn: Callable[[], object]) -> Callable[[], Awaitable[object]]:
    async def call() -> object:
        return fn()

    return call


def _p(samples: list[float], q: float) -> float:
    return statistics.quantiles(samples, n=1000)[int(q * 1000) - 1]


async def main(calls: int, generate_calls: int) -> None:
    request = _request()
    recorder = ListRecorder()
    engine = PolicyEngine(PoliciesConfig.model_validate(POLICIES), recorder=recorder, model="gpt-4o")
    engine.check_token_budget(request)  # load the encoding before timing
    provider = FakeModelProvider(["Here is the table: ACME 1.2M, Globex 0.9M, Initech 0.7M."])
    system = GuardrailSystem({"guardrails": {"checks": NO_CHECKS, "policies": POLICIES}}, recorder=recorder)
    rails = LLMRails(provider=provider, system=system, policies=engine)
    args = {"to": "ACME", "amount": 100}
    approval = Approval.for_call("transfer_funds", args, approver="alice")

    async def tool_tracking() -> None:
        await engine.tool_call_finished(engine.tool_call_started("s1", "search"), duration_seconds=0.001)

    turn = iter(range(10**9))

    def fresh_turn() -> ChatRequest:
        """The same history plus one new user message never seen before (its tokens are not memoised)."""
        msg = ChatMessage(role="user", content=f"Turn {next(turn)}: now compare that with the APAC region.")
        return request.model_copy(update={"messages": [*request.messages, msg]})

    def clear() -> None:
        recorder.events.clear()
        provider.requests.clear()

    cases: list[tuple[str, Callable[[], Awaitable[object]], int]] = [
        ("bare provider call (baseline)", lambda: provider.acomplete(request), calls),
        (
            "token budget (repeated request)",
            _sync(lambda: engine.check_token_budget(request, run_id="r1")),
            calls,
        ),
        (
            "token budget (history + new message)",
            _sync(lambda: engine.check_token_budget(fresh_turn())),
            calls,
        ),
        (
            "tool authorization (allowlist)",
            _sync(lambda: engine.before_tool_call("search", role="analyst")),
            calls,
        ),
        (
            "tool authorization (approval)",
            _sync(
                lambda: engine.before_tool_call(
                    "transfer_funds", role="analyst", arguments=args, approval=approval
                )
            ),
            calls,
        ),
        ("rate limit before_request (memory)", lambda: engine.before_request("s1"), calls),
        ("rate limit check_tool_call_limit (memory)", lambda: engine.check_tool_call_limit("s1"), calls),
        ("rate limit tool_call_started+finished", tool_tracking, calls),
        ("LLMRails.agenerate (policies only)", lambda: rails.agenerate(request, run_id="r2"), generate_calls),
    ]
    results: dict[str, list[float]] = {}
    for name, fn, n in cases:
        clear()
        results[name] = await _measure(fn, n)
        clear()

    base = statistics.median(results["bare provider call (baseline)"])
    print(f"{'case':44} {'p50 ms':>9} {'p99 ms':>9} {'x bare p50':>11}")
    for name, samples in results.items():
        p50 = statistics.median(samples)
        print(f"{name:44} {p50:9.4f} {_p(samples, 0.99):9.4f} {p50 / base:11.1f}")
    overhead = statistics.median(results["LLMRails.agenerate (policies only)"]) - base
    print()
    print(
        f"generate() overhead over the bare call: {overhead:.4f} ms p50 (goal <= 2 ms), "
        f"{overhead / base:.1f}x the bare call"
    )
    for name in list(results)[1:-1]:
        p50 = statistics.median(results[name])
        print(f"{name}: {p50:.4f} ms p50 -> {'meets' if p50 <= 0.1 else 'MISSES'} the 0.1 ms goal")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--generate-calls", type=int, default=5000)
    ns = parser.parse_args()
    asyncio.run(main(ns.calls, ns.generate_calls))
