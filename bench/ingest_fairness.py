"""Benchmark of fair ingest: how much one flooding ingest key delays another project's events. Not a test.

    nice -n 10 .venv/bin/python bench/ingest_fairness.py [--batches 20] [--interval 0.5] [--events 10]
        [--flooders 4] [--flood-events 200] [--key-rate 100]

Starts its own nats-server (the pip binary next to the interpreter), a DynamoDB (``moto_server``, a process of
its own) and guardrail-ingest in a process of its own (``auth = "keys"``, two sink workers; a stand-in for
model-api answers the key checks on the bus). Project B's agent sends ``--batches`` batches of ``--events``
events, one every ``--interval`` seconds; the **delay** of a batch is from its POST until all its events are
stored (a query on the table's run index counts them). Measured in one run, in this order:

1. baseline: B alone;
2. flood, quotas on: while B sends, ``--flooders`` clients with project A's key post batches of
   ``--flood-events`` events as fast as they can, ignoring 429 (an attacker does not back off); the quotas are
   ``--key-rate`` events/s per key (twice that per project), sized below what this machine's store drains:
   the event queue is one work queue for every tenant, so quotas protect others only while their sum stays
   under the store's rate (the shipped defaults, 1000 and 2000 events/s, suit a real DynamoDB or ClickHouse,
   not moto on a shared laptop);
3. flood, quotas off (0): the same flood against a guardrail-ingest with the quotas turned off (before them).

Prints B's delay p50/p95 per phase and the ratios to the baseline, and for each flood what the flooder got
accepted. Numbers drift between runs and machines: read the ratios, all measured in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import botocore.exceptions
import httpx
import nats
import uvicorn

from stockade.contracts import subjects
from stockade.contracts.envelope import IngestKeyQuery, IngestKeyVerdict
from stockade.guardrail_ingest.main import create_app
from stockade.guardrail_ingest.quotas import QuotaSettings
from stockade.guardrail_ingest.settings import (
    GuardrailIngestSettings,
    IngestSettings,
    SinkSettings,
    StreamSettings,
)
from stockade.runtime.settings import DatabaseSettings, HttpSettings, NatsSettings
from stockade.testing.ports import free_port, port_open, wait_until

PROJECTS = {"A" * 12: "proj-a", "B" * 12: "proj-b"}
OFF = QuotaSettings(
    key_events_per_s=0,
    key_events_burst=0,
    project_events_per_s=0,
    project_events_burst=0,
    key_bytes_in_flight=0,
    project_bytes_in_flight=0,
)


URL = "/api/v1/guardrails/dynamodb"
KEY_A = "stk_" + "A" * 12 + secrets.token_hex(19)  # project A's key: the flooder
KEY_B = "stk_" + "B" * 12 + secrets.token_hex(19)  # project B's key: the tenant whose delay is measured


def body(run_id: str, project: str, n: int) -> dict[str, Any]:
    now = datetime.now(UTC).isoformat()
    events = [
        {
            "event_id": str(uuid.uuid4()),
            "kind": "check",
            "name": "pii",
            "occurred_at": now,
            "session_id": "s",
            "action": "mask",
            "payload": {"entity_types": ["EMAIL_ADDRESS"], "score": 0.9, "text": "x" * 200},
        }
        for _ in range(n)
    ]
    return {"run": {"run_id": run_id, "project_id": project}, "events": events}


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def serve(settings: GuardrailIngestSettings) -> subprocess.Popen[bytes]:
    """guardrail-ingest in a process of its own (the flooding clients must not share its event loop)."""
    log = open(Path(tempfile.gettempdir()) / "bench-ingest-fairness-server.log", "ab")  # noqa: SIM115
    proc = subprocess.Popen(
        [sys.executable, __file__, "--serve", settings.model_dump_json()],
        stdout=log,
        stderr=log,
    )
    assert wait_until(lambda: port_open("127.0.0.1", settings.http.port), timeout=60), "ingest did not start"
    return proc


def serve_here(raw: str) -> None:
    settings = GuardrailIngestSettings.model_validate_json(raw)
    # keep-alive longer than a delayed batch's wait: an idle pooled connection must not be closed under it
    uvicorn.run(create_app(settings), port=settings.http.port, log_config=None, timeout_keep_alive=120)


async def model_api(url: str) -> Any:
    async def answer(msg: Any) -> None:
        query = IngestKeyQuery.model_validate_json(msg.data)
        project = PROJECTS.get(query.key_id)
        verdict = IngestKeyVerdict(
            valid=project is not None, reason="k", key_id=query.key_id, project_id=project
        )
        await msg.respond(verdict.model_dump_json().encode())

    nc = await nats.connect(url)
    await nc.subscribe(subjects.APIKEY_CMD_VERIFY_INGEST, cb=answer)
    await nc.flush()
    return nc


async def victim(base: str, db: Any, table: str, phase: str, args: argparse.Namespace) -> list[float]:
    """B sends a batch every ``--interval`` seconds (not waiting for the previous one); each batch's delay runs
    from its POST until all its events are stored."""

    def stored(run: str) -> int:
        try:
            answer = db.query(
                TableName=table,
                IndexName="run_id-occurred_at",
                KeyConditionExpression="run_id = :r",
                ExpressionAttributeValues={":r": {"S": run}},
                Select="COUNT",
            )
        except db.exceptions.ResourceNotFoundException:  # the sink creates the table as it starts
            return 0
        except botocore.exceptions.ClientError:  # moto answers 500 now and then under load: ask again
            return 0
        return int(answer["Count"])

    async def one(client: httpx.AsyncClient, i: int) -> float:
        run_id = f"{phase}-b-{i}"
        t0 = time.perf_counter()
        r = await client.post(URL, json=body(run_id, "proj-b", args.events), headers={"X-API-Key": KEY_B})
        assert r.status_code == 202, r.text
        while await asyncio.to_thread(stored, run_id) < args.events:
            assert time.perf_counter() < t0 + 600, f"{run_id} not stored within 600 s"
            await asyncio.sleep(0.05)
        return time.perf_counter() - t0

    async with httpx.AsyncClient(base_url=base, timeout=60) as client:
        tasks = []
        for i in range(args.batches):
            tasks.append(asyncio.create_task(one(client, i)))
            await asyncio.sleep(args.interval)
        return list(await asyncio.gather(*tasks))


async def flood(base: str, stop: asyncio.Event, args: argparse.Namespace) -> dict[int, int]:
    codes: dict[int, int] = {}
    headers = {"X-API-Key": KEY_A}
    payload = body("flood", "proj-a", args.flood_events)

    async def one(n: int) -> None:
        async with httpx.AsyncClient(base_url=base, timeout=30) as client:
            i = 0
            while not stop.is_set():
                payload["run"]["run_id"] = f"flood-{n}-{i}"
                for e in payload["events"]:
                    e["event_id"] = str(uuid.uuid4())
                try:
                    r = await client.post(URL, json=payload, headers=headers)
                except httpx.HTTPError as exc:  # the server shutting down at the end of the phase
                    codes[-1] = codes.get(-1, 0) + 1
                    if stop.is_set():
                        return
                    raise RuntimeError("flood request failed") from exc
                codes[r.status_code] = codes.get(r.status_code, 0) + 1
                i += 1

    await asyncio.gather(*(one(n) for n in range(args.flooders)))
    return codes


async def phase(name: str, base: str, db: Any, table: str, args: argparse.Namespace, flooding: bool) -> Any:
    stop = asyncio.Event()
    async with httpx.AsyncClient(base_url=base, timeout=30) as client:  # B's key checked and cached first
        warm = body(f"{name}-warm", "proj-b", 1)
        ready = await client.post(URL, json=warm, headers={"X-API-Key": KEY_B})
        assert ready.status_code == 202, ready.text
    flooders = asyncio.create_task(flood(base, stop, args)) if flooding else None
    if flooders:
        await asyncio.sleep(1.0)  # the flood is under way
    t0 = time.perf_counter()
    waiting = asyncio.create_task(victim(base, db, table, name, args))
    await asyncio.sleep(args.batches * args.interval)  # the flood lasts while B sends, then stops
    took = time.perf_counter() - t0
    codes: dict[int, int] = {}
    if flooders:
        stop.set()
        codes = await flooders
    delays = await waiting  # B's last batches may wait for the flood's backlog to drain
    return delays, codes, took


async def main(args: argparse.Namespace) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="bench-fair-"))
    moto: subprocess.Popen[bytes] | None = None
    nats_port = free_port()
    nats_proc = subprocess.Popen(  # noqa: ASYNC220 - started once, before any measurement
        [
            str(Path(sys.executable).with_name("nats-server")),
            "-a",
            "127.0.0.1",
            "-p",
            str(nats_port),
            "-js",
            "-sd",
            str(tmp / "js"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert wait_until(lambda: port_open("127.0.0.1", nats_port), timeout=10), "nats-server did not start"
        url = f"nats://127.0.0.1:{nats_port}"
        dyn_port = free_port()
        moto = subprocess.Popen(  # noqa: ASYNC220 - started once, before any measurement
            [str(Path(sys.executable).with_name("moto_server")), "-H", "127.0.0.1", "-p", str(dyn_port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        assert wait_until(lambda: port_open("127.0.0.1", dyn_port), timeout=30), "moto_server did not start"
        endpoint = f"http://127.0.0.1:{dyn_port}"
        for variable, value in {
            "AWS_ACCESS_KEY_ID": "bench",
            "AWS_SECRET_ACCESS_KEY": "bench",
            "AWS_DEFAULT_REGION": "us-east-1",
        }.items():
            os.environ.setdefault(variable, value)  # the ingest process inherits them
        responder = await model_api(url)
        db = boto3.session.Session().client("dynamodb", endpoint_url=endpoint, region_name="us-east-1")
        results: dict[str, Any] = {}
        # Quotas sized below what this machine's store drains (a work queue shared by every tenant: the sum
        # of the quotas must stay under the store's rate, or any backlog delays everyone).
        sized = QuotaSettings(
            key_events_per_s=args.key_rate,
            key_events_burst=int(args.key_rate * 2),
            project_events_per_s=args.key_rate * 2,
            project_events_burst=int(args.key_rate * 4),
        )
        for label, quotas, flooding in (
            ("baseline", QuotaSettings(), False),
            ("flood, quotas on", sized, True),
            ("flood, quotas off", OFF, True),
        ):
            table = "fair_" + uuid.uuid4().hex[:8]
            settings = GuardrailIngestSettings(
                nats=NatsSettings(url=url),
                db=DatabaseSettings(url="sqlite+aiosqlite:///:memory:"),
                http=HttpSettings(port=free_port()),
                sink=SinkSettings(kind="dynamodb", url=endpoint, table=table),
                ingest=IngestSettings(auth="keys", quotas=quotas, key_cache_s=600),
                jetstream=StreamSettings(workers=2),
            )
            settings.active.follow = False
            settings.audit.enabled = False  # no trust-broker here: nothing to audit
            server = serve(settings)
            try:
                tag = f"phase{len(results)}"  # run ids allow no spaces
                print(f"{label} ...", flush=True)
                results[label] = await phase(
                    tag, f"http://127.0.0.1:{settings.http.port}", db, table, args, flooding
                )
            finally:
                server.terminate()
                server.wait(timeout=60)
            # The next phase starts on an empty queue: drop what the flood left behind.
            await responder.jetstream().purge_stream(settings.jetstream.stream)
        await responder.close()
    finally:
        nats_proc.terminate()
        nats_proc.wait(timeout=10)
        if moto is not None:
            moto.terminate()
            try:
                moto.wait(timeout=10)
            except subprocess.TimeoutExpired:
                moto.kill()
                moto.wait(timeout=10)

    base50, base95 = pct(results["baseline"][0], 0.5), pct(results["baseline"][0], 0.95)
    print(f"project B: {args.batches} batches of {args.events} events, delay = POST until stored")
    print(f"flood: {args.flooders} clients with project A's key, batches of {args.flood_events} events")
    for label, (delays, codes, took) in results.items():
        p50, p95 = pct(delays, 0.5), pct(delays, 0.95)
        line = f"  {label:<18} p50 {p50 * 1000:7.1f} ms  p95 {p95 * 1000:7.1f} ms"
        line += f"  ratio to baseline p50 {p50 / base50:5.2f}  p95 {p95 / base95:5.2f}"
        if codes:
            accepted = codes.get(202, 0) * args.flood_events
            line += f"  | flooder: {codes} ({accepted / took:,.0f} events/s accepted)"
        print(line)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        serve_here(sys.argv[2])
        raise SystemExit(0)
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--events", type=int, default=10)
    parser.add_argument("--flooders", type=int, default=4)
    parser.add_argument("--flood-events", type=int, default=200)
    parser.add_argument("--interval", type=float, default=0.5, help="seconds between B's batches")
    parser.add_argument("--key-rate", type=float, default=100.0, help="events/s per key with quotas on")
    asyncio.run(main(parser.parse_args()))
