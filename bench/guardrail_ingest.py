"""Benchmark of guardrail run storage end to end (library -> guardrail-ingest -> JetStream -> store). Not a test.

    .venv/bin/python bench/guardrail_ingest.py [--runs 40] [--events 250] [--store clickhouse|dynamodb]

Starts its own nats-server (the pip binary next to the interpreter, JetStream in a temp dir) and store (chdb
in a temp dir, or a moto DynamoDB server), serves guardrail-ingest with uvicorn on a free port, then measures in
one run:

1. baseline A: raw JetStream publish-with-ack of the same message bodies the service publishes (sequential);
2. ingest: ``GuardrailsStorageHook.end_run()`` of ``--runs`` runs of ``--events`` events each, sequential
   (HTTP POST, validation, JetStream ack): events/s and per-run flush latency p50/p99;
3. baseline B: the sink's own ``write()`` of those batches straight into a fresh table;
4. end to end: from the first end_run() until the sink workers stored every event (events/s).

Numbers drift between runs and machines: read the ratios against the baselines measured in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx
import nats
import uvicorn

from stockade.contracts import GuardrailEventsReceived
from stockade.guardrail_ingest.main import create_app
from stockade.guardrail_ingest.records import to_records
from stockade.guardrail_ingest.settings import GuardrailIngestSettings, SinkSettings, StreamSettings
from stockade.guardrail_ingest.sinks import build_sink
from stockade.guardrails.events import EventKind, GuardrailEvent
from stockade.guardrails.storage import GuardrailBatch, GuardrailsStorageHook, StorageConfig
from stockade.runtime.settings import DatabaseSettings, HttpSettings, NatsSettings
from stockade.testing.ports import free_port, port_open, wait_until


def _event(i: int) -> GuardrailEvent:
    return GuardrailEvent(
        kind=EventKind.CHECK,
        name="pii",
        action="mask",
        session_id=f"s-{i % 7}",
        payload={
            "entity_types": ["EMAIL_ADDRESS", "PHONE_NUMBER"],
            "scores": [0.93, 0.71],
            "offsets": [[4, 20]],
        },
    )


def _pct(values: list[float], q: float) -> float:
    return sorted(values)[min(len(values) - 1, int(q * len(values)))]


async def _serve(settings: GuardrailIngestSettings) -> tuple[uvicorn.Server, asyncio.Task[None]]:
    server = uvicorn.Server(uvicorn.Config(create_app(settings), port=settings.http.port, log_config=None))
    task = asyncio.create_task(server.serve())
    while not server.started:  # noqa: ASYNC110 - uvicorn exposes a flag, not an event
        await asyncio.sleep(0.02)
    return server, task


async def main(args: argparse.Namespace) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="bench-ingest-"))
    nats_port = free_port()
    nats_bin = Path(sys.executable).with_name("nats-server")
    nats_proc = subprocess.Popen(  # noqa: ASYNC220 - started once, before any measurement
        [str(nats_bin), "-a", "127.0.0.1", "-p", str(nats_port), "-js", "-sd", str(tmp / "js")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    moto = None
    try:
        assert wait_until(lambda: port_open("127.0.0.1", nats_port), timeout=10), "nats-server did not start"
        nats_url = f"nats://127.0.0.1:{nats_port}"
        if args.store == "dynamodb":
            from moto.server import ThreadedMotoServer

            os.environ.setdefault("AWS_ACCESS_KEY_ID", "bench")
            os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "bench")
            dyn_port = free_port()
            moto = ThreadedMotoServer(ip_address="127.0.0.1", port=dyn_port, verbose=False)
            moto.start()
            url = f"http://127.0.0.1:{dyn_port}"
        else:
            url = f"chdb:///{tmp / 'chdb'}"
        total = args.runs * args.events
        runs = [[_event(i) for i in range(args.events)] for _ in range(args.runs)]
        bodies = [
            GuardrailBatch.model_validate(
                {"run": {"run_id": f"base-{r}"}, "events": [e.model_dump(mode="json") for e in evs]}
            )
            for r, evs in enumerate(runs)
        ]

        # 1. baseline A: JetStream publish with ack of the same message bodies
        nc = await nats.connect(nats_url)
        js = nc.jetstream()
        await js.add_stream(name="BENCH", subjects=["bench.events.v1"])
        messages = [
            GuardrailEventsReceived(
                event_id=uuid.uuid4(), db_type=args.store, events=to_records(b)
            ).to_bytes()
            for b in bodies
        ]
        t0 = time.perf_counter()
        for payload in messages:
            await js.publish("bench.events.v1", payload, stream="BENCH")
        js_rate = total / (time.perf_counter() - t0)
        await nc.close()

        # 3. baseline B: the sink's own write of the same batches
        sink = build_sink(SinkSettings(kind=args.store, url=url, table="bench_baseline", region="us-east-1"))
        await sink.ensure_schema()
        records = [to_records(b) for b in bodies]
        await sink.write(
            to_records(
                GuardrailBatch.model_validate(  # warm-up: chdb's first insert is slow
                    {"run": {"run_id": "warm"}, "events": [_event(0).model_dump(mode="json")]}
                )
            )
        )
        t0 = time.perf_counter()
        for batch in records:
            await sink.write(batch)
        sink_rate = total / (time.perf_counter() - t0)
        await sink.aclose()

        # 2 + 4. the library flushing runs through the served service, and the workers storing them
        settings = GuardrailIngestSettings(
            nats=NatsSettings(url=nats_url),
            db=DatabaseSettings(url="sqlite+aiosqlite:///:memory:"),
            http=HttpSettings(port=free_port()),
            sink=SinkSettings(kind=args.store, url=url, table="bench_events", region="us-east-1"),
            jetstream=StreamSettings(workers=args.workers, fetch_timeout_s=0.2),
        )
        server, task = await _serve(settings)
        base = f"http://127.0.0.1:{settings.http.port}"
        hook = GuardrailsStorageHook(
            StorageConfig(enabled=True, backend_url=base, batch_size=500), environ={}
        )
        latencies: list[float] = []
        t_start = time.perf_counter()
        for evs in runs:
            hook.begin_run()
            for e in evs:
                hook.record(e)
            t0 = time.perf_counter()
            result = await hook.end_run()
            latencies.append(time.perf_counter() - t0)
            assert result.ok, result
        ingest_s = time.perf_counter() - t_start
        async with httpx.AsyncClient(base_url=base) as client:
            while args.workers and (await client.get("/api/v1/status")).json()["inserted"] < total:  # noqa: ASYNC110
                await asyncio.sleep(0.05)
            status = (await client.get("/api/v1/status")).json()
        e2e_s = time.perf_counter() - t_start
        server.should_exit = True
        await task

        ingest_rate, e2e_rate = total / ingest_s, total / e2e_s
        print(f"load average: {os.getloadavg()[0]:.2f} (2 cores shared)")
        print(
            f"{args.runs} runs x {args.events} events = {total} events, store {args.store}, {args.workers} workers"
        )
        print(f"A  JetStream publish+ack, same bodies     {js_rate:10.0f} events/s  (baseline A)")
        print(f"B  sink write() direct, same batches        {sink_rate:10.0f} events/s  (baseline B)")
        print(
            f"2  end_run() -> 202 (HTTP+validate+JS ack) {ingest_rate:10.0f} events/s  "
            f"= {ingest_rate / js_rate:.2f} x A; flush p50 {_pct(latencies, 0.5) * 1e3:.1f} ms, "
            f"p99 {_pct(latencies, 0.99) * 1e3:.1f} ms per {args.events}-event run"
        )
        print(
            f"4  end_run() -> stored in {args.store:10s}    {e2e_rate:10.0f} events/s  "
            f"= {e2e_rate / sink_rate:.2f} x B  (inserted {status['inserted']}, duplicates {status['duplicates']})"
        )
    finally:
        nats_proc.terminate()
        nats_proc.wait(timeout=10)
        if moto is not None:
            moto.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--events", type=int, default=250)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--store", choices=["clickhouse", "dynamodb"], default="clickhouse")
    asyncio.run(main(parser.parse_args()))
