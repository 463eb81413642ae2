"""Benchmark of the console's run pages on a large ClickHouse (chdb) store. Not a test.

    .venv/bin/python bench/console_runs.py [--events 10000000] [--days 30] [--dir PATH] [--repeat 5] [--plans]

1. Creates the table with guardrail-ingest's own ClickHouse sink (its definition, not a copy) in chdb at
   ``--dir`` (a temp dir by default; an existing table there with enough rows is reused), and fills it with
   ``--events`` events generated inside ClickHouse (``INSERT ... SELECT FROM numbers()``), payloads serialised
   as the sink serialises them (sorted keys, ``json.dumps`` separators): five per run
   (checks pii, toxicity, classification, exfiltration, then a generate or a trust decision), 20 projects,
   200 agents, runs spread over ``--days`` days, payloads shaped like the library's (stage, duration_ms, score,
   finding_types).
2. Baseline, measured in the same run: ``SELECT count()`` over the last seven days (one scan of the column the
   pages filter on), so the page times can be read as a ratio of it.
3. Serves model-api and guardrail-ingest's run-store responder in this process (chdb allows one process per
   path), signs in a member of the 20 projects, and times each page over HTTP (ASGI, full request: session
   lookup, the typed NATS command, guardrail-ingest's queries, template): the median and the slowest of
   ``--repeat`` fetches after one warm-up.
4. ``--plans`` prints ``EXPLAIN indexes = 1`` of every query the pages sent.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import clickhouse_connect
import httpx

from stockade import identity
from stockade.guardrail_ingest.run_reads import RunReads
from stockade.guardrail_ingest.sinks.clickhouse import ClickHouseSink
from stockade.guardrail_ingest.sinks.router import FixedStore
from stockade.identity import create_user
from stockade.identity.tables import Project
from stockade.model_api.main import create_app
from stockade.model_api.settings import ModelApiSettings, SessionSettings
from stockade.runtime.bus import connect_broker, make_broker, stop_broker
from stockade.runtime.settings import DatabaseSettings, HttpSettings, NatsSettings
from stockade.testing.ports import free_port, port_open, wait_until

TABLE = "guardrail_events"
PASSWORD = "bench password 123"

# Columns in the order of the sink's table; every value derived from the row number n (run r = n / 5).
_FILL = """
INSERT INTO {table}
SELECT
  concat('ev-', toString(n)) AS event_id,
  concat('run-', toString(r)) AS run_id,
  if(j = 4, if(r % 50 = 0, 'trust', 'generate'), 'check') AS kind,
  multiIf(j = 0, 'pii', j = 1, 'toxicity', j = 2, 'classification', j = 3, 'exfiltration',
          r % 50 = 0, 'verify_message', 'generate') AS name,
  fromUnixTimestamp64Micro(toInt64((base + (cityHash64(r) % span)) * 1000000 + j * 25000 + h % 20000), 'UTC')
    AS occurred_at,
  concat('sess-', toString(r % 100000)) AS session_id,
  multiIf(
    j = 0, multiIf(h % 100 = 1, 'block', h % 10 = 0, 'mask', 'allow'),
    j = 1, if(h % 50 = 0, 'block', 'allow'),
    j = 2, if(h % 80 = 0, 'block', 'allow'),
    j = 3, multiIf(h % 200 = 0, 'block', h % 40 = 0, 'mask', 'allow'),
    r % 50 = 0, if(r % 3 = 0, 'block', 'allow'),
    'allow') AS action,
  multiIf(
    j = 4 AND r % 50 = 0,
      concat('{{"capability": null, "layer": "', ['A','B','C','D'][1 + r % 4], '", "reason": "',
             ['sender below the trust floor','stale message','nonce replayed','content re-validation failed'][1 + r % 4],
             '", "sender": "agent-', toString(r % 200), '"}}'),
    j = 4, '{{"timings_ms": {{"total": 850.0}}}}',
    concat('{{"duration_ms": ',
           toString(round([18.0, 42.0, 6.0, 3.0][j + 1] * (0.5 + (h % 1000) / 1000.0), 3)),
           ', "error": null, "finding_types": {{', multiIf(
             j = 0 AND h % 10 IN (0, 1), '"EMAIL_ADDRESS": 2, "PERSON": 1',
             j = 3 AND (h % 200 = 0 OR h % 40 = 0), '"AWS_ACCESS_KEY": 1',
             j = 2 AND h % 80 = 0, '"jailbreak": 1', ''),
           '}}, "score": ', toString(round((h % 100) / 100.0, 2)),
           ', "stage": "', if(j = 3, 'output', 'input'), '"}}')) AS payload,
  concat('project-', toString(r % 20)) AS project_id,
  concat('agent-', toString(r % 200)) AS agent_id,
  'prod' AS environment,
  'support' AS prompt_name,
  '3' AS prompt_version,
  concat('corr-', toString(r)) AS correlation_id,
  '{{}}' AS labels,
  now64(6) AS received_at,
  'bench-key' AS ingest_key_id
FROM (SELECT number AS n, intDiv(number, 5) AS r, number % 5 AS j, cityHash64(number) AS h,
             toUnixTimestamp(now()) - {span} AS base, {span} AS span
      FROM numbers({start}, {count}))
"""


def fill(client: Any, events: int, days: int) -> float:
    started = time.perf_counter()
    chunk = 1_000_000
    for start in range(0, events, chunk):
        count = min(chunk, events - start)
        client.command(_FILL.format(table=TABLE, span=days * 86400, start=start, count=count))
        print(f"  inserted {start + count:,} events", flush=True)
    client.command(f"OPTIMIZE TABLE {TABLE} FINAL")
    return time.perf_counter() - started


def start_nats() -> tuple[int, subprocess.Popen[bytes]]:
    """The pip nats-server next to this interpreter (model-api's lifespan connects to NATS)."""
    port = free_port()
    binary = Path(sys.executable).with_name("nats-server")
    proc = subprocess.Popen(
        [str(binary), "-a", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_until(lambda: port_open("127.0.0.1", port), timeout=10)
    return port, proc


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--events", type=int, default=10_000_000)
    ap.add_argument("--days", type=int, default=30)
    ap.add_argument("--dir", type=Path, default=None, help="chdb directory (kept; reused when filled)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--plans", action="store_true", help="print EXPLAIN indexes = 1 of the pages' queries")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="console-bench-"))
    store = args.dir or work / "chdb"
    dsn = f"chdb://{store.resolve()}"

    sink = ClickHouseSink(dsn, TABLE)
    await sink.ensure_schema()
    await sink.aclose()
    client = clickhouse_connect.get_client(dsn=dsn)
    have = int(client.query(f"SELECT count() FROM {TABLE}").result_rows[0][0])
    if have < args.events:
        client.command(f"TRUNCATE TABLE {TABLE}")
        print(f"filling {args.events:,} events over {args.days} days into {store} ...", flush=True)
        print(f"  filled in {fill(client, args.events, args.days):.1f} s")
    have = int(client.query(f"SELECT count() FROM {TABLE}").result_rows[0][0])
    parts = client.query(f"SELECT count() FROM system.parts WHERE table = '{TABLE}' AND active").result_rows[
        0
    ][0]
    print(f"store: {have:,} events, {parts} active parts, chdb {client.server_version}")

    def baseline() -> float:
        t = time.perf_counter()
        client.query(f"SELECT count() FROM {TABLE} WHERE occurred_at >= now() - INTERVAL 7 DAY").result_rows
        return time.perf_counter() - t

    base = statistics.median([baseline() for _ in range(args.repeat)])
    print(f"baseline: count() over the last 7 days {base * 1000:.0f} ms")

    nats_port, nats_proc = start_nats()
    try:
        settings = ModelApiSettings(
            db=DatabaseSettings(url=f"sqlite+aiosqlite:///{work / 'stockade.db'}"),
            nats=NatsSettings(url=f"nats://127.0.0.1:{nats_port}"),
            http=HttpSettings(port=0),
            session=SessionSettings(secure="never"),
        )
        sent: list[tuple[str, dict[str, Any]]] = []
        sink = ClickHouseSink(dsn, TABLE)
        original = sink.read_rows

        def recording(sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
            sent.append((sql, params))
            return original(sql, params)

        sink.read_rows = recording  # type: ignore[method-assign]
        ingest_nats = NatsSettings(url=settings.nats.url, startup_wait_s=5)
        broker = make_broker(ingest_nats, name="guardrail-ingest")
        nc = await connect_broker(broker, ingest_nats)
        RunReads(FixedStore(sink), lambda: "clickhouse").declare(broker, lambda: nc.max_payload)
        await broker.start()
        app = create_app(settings)
        async with app.router.lifespan_context(app):
            async with app.state.service.sessions() as s:
                user = await create_user(s, "bench@example.org", PASSWORD)
                org = await identity.create_organisation(s, "bench")
                for n in range(20):
                    s.add(Project(id=f"project-{n}", organisation_id=org.id, name=f"project-{n}"))
                await s.commit()
                for n in range(20):
                    await identity.add_project_member(s, f"project-{n}", user.id)
                await s.commit()
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://bench", timeout=120) as http:
                signed = await http.post("/login", data={"email": "bench@example.org", "password": PASSWORD})
                assert signed.status_code == 303, signed.text
                first = await http.get("/runs")
                assert first.status_code == 200, first.text[:500]
                run_id = re.search(r'<tr data-run-id="([^"]+)"', first.text).group(1)  # type: ignore[union-attr]
                project = re.search(r"project=(project-\d+)", first.text).group(1)  # type: ignore[union-attr]
                next_link = re.search(r'href="/runs\?([^"]*cursor=[^"]+)" rel="next"', first.text).group(1)  # type: ignore[union-attr]
                pages = {
                    "runs list (last 7 days)": "/runs",
                    "runs list, page 2 (cursor)": "/runs?" + next_link.replace("&amp;", "&"),
                    "runs list, one project": f"/runs?project={project}",
                    "runs list, outcome=block": "/runs?outcome=block",
                    "runs list, check+action": "/runs?check=toxicity&action=block",
                    "runs list, 31 days": "/runs?from="
                    + time.strftime("%Y-%m-%dT%H:%M", time.gmtime(time.time() - 31 * 86400)),
                    "run page (with project)": f"/run/{run_id}?project={project}",
                    "run page (run id only)": f"/run/{run_id}",
                    "overview (last 7 days)": "/runs/overview",
                    "overview, one project": f"/runs/overview?project={project}",
                }
                print(f"\n{'page':<30} {'median ms':>10} {'max ms':>8} {'x baseline':>10}")
                plans: dict[str, list[tuple[str, dict[str, Any]]]] = {}
                for label, path in pages.items():
                    answer = await http.get(path)
                    assert answer.status_code == 200, (path, answer.status_code, answer.text[:300])
                    times = []
                    for _ in range(args.repeat):
                        sent.clear()
                        t = time.perf_counter()
                        answer = await http.get(path)
                        times.append(time.perf_counter() - t)
                        assert answer.status_code == 200
                    plans[label] = list(sent)
                    median = statistics.median(times)
                    print(
                        f"{label:<30} {median * 1000:>10.0f} {max(times) * 1000:>8.0f} {median / base:>10.1f}"
                    )
        if args.plans:
            for label, queries in plans.items():
                print(f"\n## {label}")
                for sql, params in queries:
                    plan = client.query("EXPLAIN indexes = 1 " + sql, parameters=params).result_rows
                    print(re.sub(r"\s+", " ", sql.strip())[:200] + " ...")
                    for (line,) in plan:
                        if any(
                            k in line
                            for k in (
                                "ReadFromMergeTree",
                                "Parts:",
                                "Granules:",
                                "Keys:",
                                "Condition",
                                "Partition",
                                "PrimaryKey",
                                "MinMax",
                            )
                        ):
                            print("   ", line)
        await stop_broker(broker, 5)
    finally:
        nats_proc.terminate()
        nats_proc.wait(timeout=10)


if __name__ == "__main__":
    asyncio.run(main())
