"""Benchmark of guardrail run storage end to end (library -> guardrail-ingest -> JetStream -> store). Not a test.

    nice -n 10 .venv/bin/python bench/guardrail_ingest.py [--store clickhouse|dynamodb|mongodb]
        [--runs 80] [--events 250] [--clients 4] [--workers 2] [--service-process [one|split]]

Starts its own nats-server (the pip binary next to the interpreter, JetStream in a temp dir) and store (chdb
in a temp dir, a moto DynamoDB server, or MongoDB at MONGODB_URL else a local mongoeco wire server), serves
guardrail-ingest with uvicorn on a free port, then measures in one run:

A. baseline: plain JetStream publish-with-ack of the same message bodies the service publishes (sequential);
P. baseline: the store's plain bulk write of the same rows, in the groups a sink worker writes (one fetch of
   ``fetch_batch`` runs per write): clickhouse-connect ``insert`` of ready rows, pymongo ``insert_many`` of ready
   documents, boto3 ``batch_write_item`` of ready items (25 per request, sequential); measured before and after
   B, the faster of the two is the baseline (the machine's load shifts between them);
B. the sink's own ``write()`` of the same records in the same groups (conversion, insert token, all of it);
2. ingest: ``--clients`` agents, each flushing its runs in turn with ``GuardrailsStorageHook.end_run()`` (HTTP
   POST, validation, JetStream ack): events/s and per-run flush latency p50/p99;
4. end to end: from the first end_run() until the sink workers stored every event, then the stored events are
   counted as a reader sees them (ClickHouse: ``FINAL``): lost and duplicated must both be 0.

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
from typing import Any

import httpx
import nats
import uvicorn

from stockade.contracts import GuardrailEventsReceived
from stockade.guardrail_ingest.main import create_app
from stockade.guardrail_ingest.records import to_records
from stockade.guardrail_ingest.settings import (
    GuardrailIngestSettings,
    IngestSettings,
    SinkSettings,
    StreamSettings,
)
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


def _groups(records: list[list[dict[str, Any]]], per_write: int) -> list[list[dict[str, Any]]]:
    return [[r for run in records[i : i + per_write] for r in run] for i in range(0, len(records), per_write)]


async def _plain_write(store: str, sink: Any, table: str, groups: list[list[dict[str, Any]]]) -> float:
    """Seconds for the store's plain bulk write of ready rows/documents/items (converted before the clock)."""
    if store == "clickhouse":
        from stockade.guardrail_ingest.sinks.clickhouse import _COLUMNS, _row

        client = sink._connected()
        client.command(f"CREATE TABLE {table} AS {sink.table}")
        ready = [[_row(r) for r in g] for g in groups]
        t0 = time.perf_counter()
        for rows in ready:
            await asyncio.to_thread(client.insert, table, rows, column_names=list(_COLUMNS))
        return time.perf_counter() - t0
    if store == "mongodb":
        from stockade.guardrail_ingest.sinks.mongodb import _document

        collection = sink.collection.database[table]
        docs = [[_document(r) for r in g] for g in groups]
        t0 = time.perf_counter()
        for group in docs:
            await collection.insert_many(group, ordered=False)
        return time.perf_counter() - t0
    from stockade.guardrail_ingest.sinks.dynamodb import _item

    client = sink._client
    client.create_table(
        TableName=table,
        KeySchema=[{"AttributeName": "event_id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "event_id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    requests = [
        [{"PutRequest": {"Item": _item(r)}} for r in g[i : i + 25]]
        for g in groups
        for i in range(0, len(g), 25)
    ]

    def write_all() -> None:
        for chunk in requests:
            pending: dict[str, Any] = {table: chunk}
            while pending:
                pending = client.batch_write_item(RequestItems=pending).get("UnprocessedItems") or {}

    t0 = time.perf_counter()
    await asyncio.to_thread(write_all)
    return time.perf_counter() - t0


async def _readers_count(store: str, sink: Any) -> tuple[int, int]:
    """(stored events as a reader sees them, distinct event ids)."""
    if store == "clickhouse":
        rows = await asyncio.to_thread(
            lambda: (
                sink._connected()
                .query(f"SELECT count(), uniqExact(event_id) FROM {sink.table} FINAL")
                .result_rows
            )
        )
        return int(rows[0][0]), int(rows[0][1])
    if store == "mongodb":
        ids = [d["event_id"] async for d in sink.collection.find({}, {"event_id": 1})]
        return len(ids), len(set(ids))
    paginator = sink._client.get_paginator("scan")
    ids = [
        i["event_id"]["S"]
        for page in paginator.paginate(TableName=sink.table, ProjectionExpression="event_id")
        for i in page["Items"]
    ]
    return len(ids), len(set(ids))


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
    moto: Any = None
    mongo: Any = None
    load_before = os.getloadavg()[0]
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
        elif args.store == "mongodb":
            url = os.environ.get("MONGODB_URL", "")
            if not url:
                from stockade.testing.mongo import _MongoEcoServer, find_python313, mongoeco_venv

                python = find_python313()
                assert python is not None, "no Python >= 3.13 for mongoeco; set MONGODB_URL"
                mongo = _MongoEcoServer(mongoeco_venv(python))
                url = mongo.url.replace("/?", "/bench?")
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
        stream = StreamSettings(workers=args.workers, fetch_timeout_s=0.2)
        groups = _groups([to_records(b) for b in bodies], stream.fetch_batch)

        # A. JetStream publish with ack of the same message bodies
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

        # P and B. the store's plain bulk write, and the sink's write(), of the same records in the same groups
        sink = build_sink(SinkSettings(kind=args.store, url=url, table="bench_sink", region="us-east-1"))
        await sink.ensure_schema()
        warm = to_records(
            GuardrailBatch.model_validate(  # warm-up: chdb's first insert is slow
                {"run": {"run_id": "warm"}, "events": [_event(0).model_dump(mode="json")]}
            )
        )
        await sink.write(warm)
        plain_s = await _plain_write(args.store, sink, "bench_plain", groups)
        t0 = time.perf_counter()
        for group in groups:
            await sink.write(group)
        sink_rate = total / (time.perf_counter() - t0)
        plain_rate = total / min(plain_s, await _plain_write(args.store, sink, "bench_plain2", groups))
        await sink.aclose()

        # 2 + 4. agents flushing runs through the served service, and the workers storing them
        settings = GuardrailIngestSettings(
            nats=NatsSettings(url=nats_url),
            db=DatabaseSettings(url="sqlite+aiosqlite:///:memory:"),
            http=HttpSettings(port=free_port()),
            sink=SinkSettings(kind=args.store, url=url, table="bench_events", region="us-east-1"),
            ingest=IngestSettings(auth="open"),  # the storage path; a cached key check is one dict look-up
            jetstream=stream,
        )
        service: Any = None
        workers_proc: Any = None
        status_base = f"http://127.0.0.1:{settings.http.port}"
        if args.service_process:  # the deployment's shape: the service in its own process (its own GIL)
            env = {
                **os.environ,
                "GUARDRAIL_INGEST_NATS__URL": nats_url,
                "GUARDRAIL_INGEST_DB__URL": "sqlite+aiosqlite:///:memory:",
                "GUARDRAIL_INGEST_HTTP__PORT": str(settings.http.port),
                "GUARDRAIL_INGEST_SINK__KIND": args.store,
                f"GUARDRAIL_INGEST_SINK__{args.store.upper()}_URL": url,
                "GUARDRAIL_INGEST_SINK__TABLE": "bench_events",
                "GUARDRAIL_INGEST_SINK__REGION": "us-east-1",
                "GUARDRAIL_INGEST_JETSTREAM__WORKERS": str(args.workers),
                "GUARDRAIL_INGEST_JETSTREAM__FETCH_TIMEOUT_S": "0.2",
                "GUARDRAIL_INGEST_LOG__LEVEL": "WARNING",
                "GUARDRAIL_INGEST_INGEST__AUTH": "open",
            }
            if args.service_process == "split":  # HTTP replica without workers, and a replica of workers only
                worker_port = free_port()
                workers_proc = subprocess.Popen(  # noqa: ASYNC220 - started once, before any measurement
                    [sys.executable, "-m", "stockade.guardrail_ingest"],
                    env={**env, "GUARDRAIL_INGEST_HTTP__PORT": str(worker_port)},
                    stderr=subprocess.DEVNULL,
                )
                env["GUARDRAIL_INGEST_JETSTREAM__WORKERS"] = "0"
                status_base = f"http://127.0.0.1:{worker_port}"
                assert wait_until(lambda: port_open("127.0.0.1", worker_port), timeout=60), "workers down"
            service = subprocess.Popen(  # noqa: ASYNC220 - started once, before any measurement
                [sys.executable, "-m", "stockade.guardrail_ingest"], env=env, stderr=subprocess.DEVNULL
            )
            assert wait_until(lambda: port_open("127.0.0.1", settings.http.port), timeout=60), "service down"
        else:
            server, task = await _serve(settings)
        base = f"http://127.0.0.1:{settings.http.port}"
        latencies: list[float] = []

        async def agent(my_runs: list[list[GuardrailEvent]]) -> None:
            hook = GuardrailsStorageHook(
                StorageConfig(enabled=True, backend_url=base, batch_size=500), environ={}
            )
            for evs in my_runs:
                hook.begin_run()
                for e in evs:
                    hook.record(e)
                t = time.perf_counter()
                result = await hook.end_run()
                latencies.append(time.perf_counter() - t)
                assert result.ok, result

        t_start = time.perf_counter()
        await asyncio.gather(*(agent(runs[c :: args.clients]) for c in range(args.clients)))
        ingest_s = time.perf_counter() - t_start
        async with httpx.AsyncClient(base_url=status_base) as client:
            while args.workers and (await client.get("/api/v1/status")).json()["inserted"] < total:  # noqa: ASYNC110
                await asyncio.sleep(0.02)
            status = (await client.get("/api/v1/status")).json()
        e2e_s = time.perf_counter() - t_start
        if service is not None:
            for proc in (service, workers_proc):
                if proc is not None:
                    proc.terminate()
                    await asyncio.to_thread(proc.wait, 30)
        else:
            server.should_exit = True
            await task
        seen = distinct = 0
        if args.workers:  # with no workers nothing is stored (the HTTP path alone is measured)
            reader = build_sink(
                SinkSettings(kind=args.store, url=url, table="bench_events", region="us-east-1")
            )
            seen, distinct = await _readers_count(args.store, reader)
            await reader.aclose()

        ingest_rate, e2e_rate = total / ingest_s, total / e2e_s
        print(f"load average: {load_before:.2f} before, {os.getloadavg()[0]:.2f} after (2 cores shared)")
        print(
            f"{args.runs} runs x {args.events} events = {total} events, store {args.store}, {args.workers} workers, "
            f"{args.clients} agents, {stream.fetch_batch} runs per sink write"
        )
        print(f"A  JetStream publish+ack, same bodies     {js_rate:10.0f} events/s  (baseline A)")
        print(f"P  plain bulk write, same groups          {plain_rate:10.0f} events/s  (baseline P)")
        print(
            f"B  sink write(), same groups              {sink_rate:10.0f} events/s  = {sink_rate / plain_rate:.2f} x P"
        )
        print(
            f"2  end_run() -> 202 (HTTP+validate+JS ack) {ingest_rate:10.0f} events/s  "
            f"= {ingest_rate / js_rate:.3f} x A; flush p50 {_pct(latencies, 0.5) * 1e3:.1f} ms, "
            f"p99 {_pct(latencies, 0.99) * 1e3:.1f} ms per {args.events}-event run"
        )
        print(
            f"4  end_run() -> stored in {args.store:10s}    {e2e_rate:10.0f} events/s  "
            f"= {e2e_rate / plain_rate:.2f} x P, {e2e_rate / js_rate:.3f} x A"
        )
        print(
            f"   readers see {seen} of {total if args.workers else 0}: lost {(total if args.workers else 0) - distinct}, duplicated {seen - distinct} "
            f"(worker counters: inserted {status['inserted']}, duplicates {status['duplicates']})"
        )
    finally:
        nats_proc.terminate()
        nats_proc.wait(timeout=10)
        if moto is not None:
            moto.stop()
        if mongo is not None:
            mongo.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=80)
    parser.add_argument("--events", type=int, default=250)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--clients", type=int, default=4, help="agents flushing runs at the same time")
    parser.add_argument(
        "--service-process",
        nargs="?",
        const="one",
        choices=["one", "split"],
        help="run guardrail-ingest in its own process, as deployed (split: an HTTP replica with no workers and "
        "a replica of workers only)",
    )
    parser.add_argument("--store", choices=["clickhouse", "dynamodb", "mongodb"], default="clickhouse")
    asyncio.run(main(parser.parse_args()))
