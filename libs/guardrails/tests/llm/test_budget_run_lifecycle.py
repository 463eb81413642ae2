"""The per-run token budget follows the run lifecycle (spec 3): begin_run() opens a run's total, generate()
calls in that run are charged to it without naming it, and end_run() frees it, so a long-lived agent's
budget state stays flat however many runs it serves."""

from __future__ import annotations

import gc
import tracemalloc

import pytest

from stockade.guardrails import Action
from stockade.guardrails.llm.rails import LLMRails
from stockade.guardrails.messages import ChatMessage, ChatRequest, ModelResponse, TokenUsage
from stockade.guardrails.policies import TokenBudget, TokenBudgetConfig
from stockade.guardrails.system import GuardrailSystem
from stockade.guardrails.testing import FakeModelProvider

from .conftest import NO_BUILTIN_CHECKS

PER_RUN = {"per_run": 300, "counter": "approximate"}


def _system(**token_budget: object) -> GuardrailSystem:
    policies = {"token_budget": {**PER_RUN, **token_budget}}
    return GuardrailSystem({"guardrails": {"checks": NO_BUILTIN_CHECKS, "policies": policies}})


def _long_reply() -> ModelResponse:
    return ModelResponse(text="...", usage=TokenUsage(input_tokens=20, output_tokens=280))


async def test_generate_without_run_id_is_charged_to_the_run_begin_run_opened() -> None:
    system = _system()
    rails = LLMRails(provider=FakeModelProvider([_long_reply(), "second", "third"]), system=system)
    run_id = rails.begin_run()
    first = await rails.agenerate("hi")
    assert first.passed and rails.policies.budget.run_used(run_id) == 300
    second = await rails.agenerate("hi again")
    assert second.blocked_at == "input" and second.error == "per_run_exceeded"
    await rails.end_run()
    # The run's total is freed with it; the next run starts from zero.
    assert rails.policies.budget.tracked_runs() == 0
    system.begin_run()
    assert (await rails.agenerate("a new run")).passed


async def test_system_end_run_frees_the_total_of_every_rails_built_on_it() -> None:
    system = _system()
    planner = LLMRails(provider=FakeModelProvider(["a", "b"]), system=system)
    writer = LLMRails(provider=FakeModelProvider(["c", "d"]), system=system)
    run_id = system.begin_run()
    assert (await planner.agenerate("plan it")).passed
    assert (await writer.agenerate("write it")).passed
    assert planner.policies.budget.run_used(run_id) > 0 and writer.policies.budget.run_used(run_id) > 0
    await system.end_run(run_id)  # the system's end_run, not the rails': both budgets hear of it
    assert planner.policies.budget.tracked_runs() == 0 and writer.policies.budget.tracked_runs() == 0


async def test_an_explicit_run_id_still_wins_over_the_current_run() -> None:
    system = _system()
    rails = LLMRails(provider=FakeModelProvider([_long_reply(), "other"]), system=system)
    current = rails.begin_run()
    assert (await rails.agenerate("hi", run_id="elsewhere")).passed
    assert rails.policies.budget.run_used("elsewhere") == 300
    assert rails.policies.budget.run_used(current) == 0
    assert (await rails.agenerate("in the current run")).passed


def test_sync_generate_inside_a_run_is_charged_to_it() -> None:
    system = _system()
    rails = LLMRails(provider=FakeModelProvider([_long_reply(), "no"]), system=system)
    run_id = system.begin_run()
    assert rails.generate("hi").passed
    assert rails.generate("again").error == "per_run_exceeded"
    assert system.end_run_sync(run_id).ok
    assert rails.policies.budget.tracked_runs() == 0


async def test_the_systems_own_policy_engine_follows_the_lifecycle_too() -> None:
    system = _system()
    request = ChatRequest(messages=[ChatMessage(role="user", content="x" * 800)])
    run_id = system.begin_run()
    assert system.policies.check_token_budget(request, run_id=run_id).action is Action.ALLOW
    assert system.policies.check_token_budget(request, run_id=run_id).action is Action.BLOCK
    await system.end_run(run_id)
    assert system.policies.budget.tracked_runs() == 0


@pytest.mark.slow  # about a minute on two shared cores: 100,000 runs under tracemalloc, 5 frames deep
async def test_100k_runs_leave_the_budget_state_flat() -> None:
    system = _system(per_run=1_000_000)
    budget = system.policies.budget
    request = ChatRequest(messages=[ChatMessage(role="user", content="count me")])

    async def runs(n: int) -> None:
        for _ in range(n):
            run_id = system.begin_run()
            assert system.policies.check_token_budget(request, run_id=run_id).action is Action.ALLOW
            budget.record_output(run_id, 5)
            await system.end_run(run_id)

    await runs(1_000)  # warm caches (token counts, pydantic, logging) before measuring
    gc.collect()
    # Only what the guardrails code allocates counts: in the full suite, threads left by other tests allocate
    # during these runs too (CI once saw 265 kB in all; this loop alone grows by under 1 kB). A trace counts
    # when any of its innermost five frames is the library's or this file's.
    tracemalloc.start(5)
    try:
        before = tracemalloc.take_snapshot()
        await runs(100_000)
        gc.collect()
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    ours = [
        tracemalloc.Filter(True, "*/stockade/guardrails/*", all_frames=True),
        tracemalloc.Filter(True, __file__, all_frames=True),
    ]
    stats = after.filter_traces(ours).compare_to(before.filter_traces(ours), "filename")
    grown = sum(stat.size_diff for stat in stats)
    where = [f"{s.traceback[0].filename}: {s.size_diff} B" for s in stats[:5]]
    assert budget.tracked_runs() == 0 and system.storage.open_runs() == []
    # One kept entry per run would be at least ~100 bytes x 100,000 = 10 MB; flat state stays far under 1 MB.
    assert grown < 256 * 1024, f"budget state grew by {grown} bytes over 100,000 runs, most in {where}"


def test_unmanaged_run_ids_are_bounded() -> None:
    budget = TokenBudget(TokenBudgetConfig(per_run=100, counter="approximate", max_unmanaged_runs=50))
    request = ChatRequest(messages=[ChatMessage(role="user", content="hello")])
    for i in range(100_000):
        budget.check(request, run_id=f"adhoc-{i}")
    assert budget.tracked_runs() == 50 and budget.forgotten_runs == 100_000 - 50
    # The most recently charged ones are the ones kept; an opened run is never forgotten.
    assert budget.run_used("adhoc-99999") > 0 and budget.run_used("adhoc-0") == 0
    budget.begin_run("kept")
    budget.check(request, run_id="kept")
    for i in range(200):
        budget.check(request, run_id=f"more-{i}")
    assert budget.run_used("kept") > 0
    budget.end_run("kept")
    assert budget.run_used("kept") == 0 and budget.tracked_runs() == 50
