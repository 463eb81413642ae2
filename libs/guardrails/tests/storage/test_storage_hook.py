"""GuardrailsStorageHook: per-run buffering, routing, bounds, links; flushing through BackendGuardrailSink to a
scripted backend on a real socket (retries, 409 refresh, rejection, backend down)."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import SecretStr

from stockade.guardrails import GuardrailSystem
from stockade.guardrails.events import EventKind, GuardrailEvent
from stockade.guardrails.storage import FlushStatus, GuardrailsStorageHook, StorageConfig
from stockade.guardrails.testing import InMemoryRecorder

NO_BUILTIN_CHECKS = {name: {"enabled": False} for name in ("pii", "exfiltration", "classification")}
FAST = {"backoff_initial_s": 0.01, "backoff_max_s": 0.05, "timeout_s": 5}


def _event(name: str = "pii", **kw: object) -> GuardrailEvent:
    return GuardrailEvent(kind=EventKind.CHECK, name=name, action="allow", **kw)  # type: ignore[arg-type]


def _hook(url: str, **cfg: object) -> GuardrailsStorageHook:
    return GuardrailsStorageHook(
        StorageConfig(enabled=True, backend_url=url, **{**FAST, **cfg}),  # type: ignore[arg-type]
        environ={},
    )


async def test_end_run_sends_the_runs_events_with_its_links(backend) -> None:
    hook = GuardrailsStorageHook(
        StorageConfig(enabled=True, backend_url=backend.url, **FAST),
        environ={
            "STOCKADE_PROJECT_ID": "proj-env",
            "STOCKADE_RUN_ID": "job-42",
            "STOCKADE_AGENT_ID": "a-env",
        },
    )
    hook.link_arms(agent_id="planner", prompt_name="triage", prompt_version=3, labels={"team": "risk"})
    run_id = hook.begin_run()
    hook.link_run_context(labels={"ticket": "T-1"})
    for i in range(3):
        hook.record(_event(f"check-{i}"))
    result = await hook.end_run()
    assert result.ok and result.status is FlushStatus.SENT and result.sent == 3
    assert result.db_type == "clickhouse" and result.run_id == run_id
    [body] = backend.posts
    assert backend.paths == ["/api/v1/guardrails/clickhouse"]
    run = body["run"]
    assert (run["run_id"], run["project_id"], run["agent_id"], run["correlation_id"]) == (
        run_id,
        "proj-env",
        "planner",
        "job-42",
    )
    assert run["prompt_name"] == "triage" and run["prompt_version"] == "3"
    assert run["labels"] == {"team": "risk", "ticket": "T-1"}
    assert run["started_at"] and run["ended_at"]
    assert [e["name"] for e in body["events"]] == ["check-0", "check-1", "check-2"]
    assert {e["run_id"] for e in body["events"]} == {run_id}  # stamped on events that had none


async def test_db_type_is_asked_once_and_big_runs_go_in_batches(backend) -> None:
    hook = _hook(backend.url, batch_size=4)
    for _ in range(2):
        hook.begin_run()
        for _ in range(10):
            hook.record(_event())
        assert (await hook.end_run()).sent == 10
    assert backend.db_type_gets == 1
    assert [len(p["events"]) for p in backend.posts] == [4, 4, 2, 4, 4, 2]
    assert len(backend.stored) == 20


async def test_concurrent_runs_keep_their_own_events(backend) -> None:
    hook = _hook(backend.url)

    async def agent(name: str) -> str:
        run_id = hook.begin_run(f"run-{name}")
        for _ in range(5):
            hook.record(_event(name))
            await asyncio.sleep(0)
        result = await hook.end_run()
        assert result.sent == 5
        return run_id

    await asyncio.gather(agent("a"), agent("b"), agent("c"))
    by_run = {p["run"]["run_id"]: {e["name"] for e in p["events"]} for p in backend.posts}
    assert by_run == {"run-a": {"a"}, "run-b": {"b"}, "run-c": {"c"}}


async def test_event_run_id_routes_and_unmatched_events_are_counted(backend) -> None:
    hook = _hook(backend.url)
    hook.record(_event())  # no run open: nowhere to go
    assert hook.unrouted == 1

    async def open_run(run_id: str) -> None:  # opened in another task: not current here
        hook.begin_run(run_id)

    await asyncio.create_task(open_run("r1"))
    await asyncio.create_task(open_run("r2"))
    hook.record(_event(run_id="r2"))
    hook.record(_event())  # two runs open, none current in this context
    assert hook.unrouted == 2
    assert [e.run_id for e in hook.buffered("r2")] == ["r2"] and hook.buffered("r1") == []


async def test_buffer_bound_drops_and_reports(backend) -> None:
    hook = _hook(backend.url, max_buffer=3)
    hook.begin_run()
    for _ in range(5):
        hook.record(_event())
    result = await hook.end_run()
    assert (result.sent, result.dropped) == (3, 2)
    assert backend.posts[0]["run"]["dropped_events"] == 2


async def test_backend_down_returns_a_failure_value_and_keeps_events_for_retry(backend, dead_url) -> None:
    hook = _hook(dead_url, max_retries=1)
    run_id = hook.begin_run()
    hook.record(_event())
    hook.record(_event())
    failed = await hook.end_run()
    assert failed.status is FlushStatus.FAILED and not failed.ok
    assert failed.pending == 2 and failed.sent == 0 and "ConnectError" in (failed.error or "")
    assert hook.pending_runs() == {run_id: 2}

    hook.sink.config = hook.config = hook.config.model_copy(update={"backend_url": backend.url})
    retried = await hook.end_run(run_id)
    assert retried.ok and retried.sent == 2 and hook.pending_runs() == {}
    assert len(backend.stored) == 2


async def test_5xx_and_429_are_retried_then_succeed(backend) -> None:
    backend.script = [503, 429, 502]
    hook = _hook(backend.url, max_retries=3)
    hook.begin_run()
    hook.record(_event())
    result = await hook.end_run()
    assert result.ok and len(backend.posts) == 4 and len(backend.stored) == 1


async def test_retries_exhausted_keeps_only_the_unsent_batches(backend) -> None:
    backend.fail_after = 1  # the first batch is stored, then the backend answers 503
    hook = _hook(backend.url, max_retries=1, batch_size=2)
    run_id = hook.begin_run()
    for _ in range(5):
        hook.record(_event())
    result = await hook.end_run()
    assert result.status is FlushStatus.FAILED and (result.sent, result.pending) == (2, 3)
    assert hook.pending_runs() == {run_id: 3} and len(backend.stored) == 2

    backend.fail_after = None
    [again] = await hook.flush_pending()
    assert again.ok and again.sent == 3 and len(backend.stored) == 5


async def test_4xx_rejection_is_not_retried_and_not_kept(backend) -> None:
    backend.script = [422]
    hook = _hook(backend.url)
    hook.begin_run()
    hook.record(_event())
    result = await hook.end_run()
    assert result.status is FlushStatus.REJECTED and result.rejected == 1 and "422" in (result.error or "")
    assert len(backend.posts) == 1 and hook.pending_runs() == {}


async def test_409_refreshes_the_cached_db_type(backend) -> None:
    hook = _hook(backend.url)
    hook.begin_run()
    hook.record(_event())
    assert (await hook.end_run()).db_type == "clickhouse"
    backend.db_type = "mongodb"  # the backend's store was switched
    hook.begin_run()
    hook.record(_event())
    result = await hook.end_run()
    assert result.ok and result.db_type == "mongodb" and backend.db_type_gets == 2
    assert backend.paths[-2:] == ["/api/v1/guardrails/clickhouse", "/api/v1/guardrails/mongodb"]


async def test_api_key_header_is_sent(backend) -> None:
    hook = _hook(backend.url, api_key="s3cret-key")
    hook.begin_run()
    hook.record(_event())
    await hook.end_run()
    assert backend.headers[0]["x-api-key"] == "s3cret-key"
    assert "s3cret-key" not in repr(hook.config)


async def test_ingest_key_comes_from_stockade_ingest_key_when_not_configured(backend) -> None:
    cfg = StorageConfig(enabled=True, backend_url=backend.url, **FAST)  # type: ignore[arg-type]
    from_env = GuardrailsStorageHook(cfg, environ={"STOCKADE_INGEST_KEY": "stk_from_env"})
    configured = GuardrailsStorageHook(
        cfg.model_copy(update={"api_key": SecretStr("stk_configured")}),
        environ={"STOCKADE_INGEST_KEY": "stk_from_env"},
    )
    for hook in (from_env, configured):
        hook.begin_run()
        hook.record(_event())
        await hook.end_run()
    sent = [h["x-api-key"] for h in backend.headers if h.get("x-api-key")]
    assert sent[0] == "stk_from_env" and sent[-1] == "stk_configured"


async def test_disabled_storage_needs_no_server_and_keeps_nothing(dead_url) -> None:
    recorder = InMemoryRecorder()
    system = GuardrailSystem(storage={"backend_url": dead_url}, recorder=recorder, **NO_BUILTIN_CHECKS)
    run_id = system.begin_run()
    system.before_tool_call("search", role="analyst")
    result = await system.end_run()
    assert result.ok and result.status is FlushStatus.DISABLED and result.run_id == run_id
    assert system.storage.buffered(run_id) == [] and len(recorder.events) >= 1  # caller's recorder still fed


def test_system_end_run_sync_with_backend_down_does_not_raise(dead_url) -> None:
    system = GuardrailSystem(
        storage={"enabled": True, "backend_url": dead_url, "max_retries": 0}, **NO_BUILTIN_CHECKS
    )
    system.begin_run("run-sync")
    system.before_tool_call("search", role="analyst")
    result = system.end_run_sync()
    assert result.status is FlushStatus.FAILED and result.pending >= 1


def test_bad_config_fails_fast() -> None:
    with pytest.raises(ValueError, match="backend_url"):
        StorageConfig(backend_url="ingest:8103")
    with pytest.raises(ValueError):
        GuardrailsStorageHook(environ={}).begin_run("bad id with spaces")


async def test_callers_recorder_and_storage_both_get_every_event(backend) -> None:
    recorder = InMemoryRecorder()
    system = GuardrailSystem(
        storage={"enabled": True, "backend_url": backend.url, **FAST},
        recorder=recorder,
        policies={"tools": {"deny": ["shell.exec"]}},
        **NO_BUILTIN_CHECKS,
    )
    system.link_arms("proj-tee")
    run_id = system.begin_run("run-tee")
    assert not system.before_tool_call("shell.exec", session_id="s").passed
    result = await system.end_run()
    assert result.ok and result.sent == len(recorder.events) >= 1
    assert {e["event_id"] for e in backend.posts[0]["events"]} == {e.event_id for e in recorder.events}
    assert backend.posts[0]["run"]["run_id"] == run_id and backend.posts[0]["run"]["project_id"] == "proj-tee"


async def test_checkpoint_sends_so_far_and_keeps_the_run_open(backend, dead_url) -> None:
    hook = _hook(backend.url, max_buffer=4)
    run_id = hook.begin_run()
    for _ in range(4):
        hook.record(_event("early"))
    first = await hook.checkpoint()
    assert first.ok and first.sent == 4 and hook.buffered() == [] and run_id in hook.open_runs()
    for _ in range(3):  # room again: the buffer bound applies to what is not sent yet
        hook.record(_event("late"))

    hook.sink.config = hook.config.model_copy(update={"backend_url": dead_url, "max_retries": 0})
    failed = await hook.checkpoint()
    assert failed.status is FlushStatus.FAILED and failed.pending == 3 and len(hook.buffered()) == 3

    hook.sink.config = hook.config
    final = await hook.end_run()
    assert final.ok and final.sent == 3 and final.dropped == 0
    assert sorted(e["name"] for e in backend.stored.values()) == ["early"] * 4 + ["late"] * 3
