"""Benchmark: guardrail-ingest's JetStream pull loop in plain nats-py against a FastStream pull subscriber (issue 15).
Not a test: run it by hand.

    nice -n 10 .venv/bin/python bench/ingest_pull_consumer.py [--messages 20000] [--batch 16] [--rounds 3]
        [--body-bytes 2048]

Starts its own nats-server (``stockade.testing.nats.started_nats_server``, JetStream in a temp dir), stores
``--messages`` messages of ``--body-bytes`` (a ``GuardrailEventsReceived``-sized JSON body) in one stream, then
drains them with a fresh durable pull consumer (the sink workers' consumer settings: explicit ack, ``ack_wait``
60 s, ``max_ack_pending`` 1000) in each of these ways, alternated for ``--rounds`` rounds:

A. baseline, the sink worker's loop (``stockade.guardrail_ingest.worker.SinkWorker._consume``): nats-py
   ``pull_subscribe`` + ``fetch(batch, timeout=1)``, the bodies to a no-op sink, then every message
   ``ack_sync()``-ed together (``asyncio.gather``), one fetch after the other;
B. FastStream: the service's broker (``stockade.runtime.bus.make_broker``: FastDepends on, per-message debug
   log) with ``broker.subscriber(..., pull_sub=PullSub(batch, timeout=1, batch=True),
   ack_policy=AckPolicy.MANUAL)`` on the same consumer settings; its decoder hands the handler the raw messages
   (like ``raw_body``, so no Context injection, which costs a thread hop per call), and the handler calls the same
   no-op sink and acks the same way (``ack_sync`` of every message, gathered), as the worker must to stay
   exactly-once;
C. FastStream as B on a broker built as trust-broker builds its own (``apply_types=False, logger=None``).

Throughput is messages acknowledged per second, from the start of consuming until the last ack; the best round
of each is kept. The ratios against A are printed last (1.00 = as fast as plain nats-py).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import nats
from faststream import AckPolicy as HandlerAck
from faststream.message import StreamMessage
from faststream.nats import JStream, PullSub
from nats.aio.msg import Msg
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from stockade.runtime.bus import make_broker, stop_broker
from stockade.runtime.settings import NatsSettings
from stockade.testing.nats import started_nats_server

STREAM, SUBJECT = "BENCH_PULL", "bench.pull.v1"
FETCH_TIMEOUT_S = 1.0


def _body(size: int) -> bytes:
    """A run-events batch of about ``size`` bytes (the worker's messages are GuardrailEventsReceived JSON)."""
    event = {"event_id": "", "kind": "check", "name": "pii", "action": "mask", "payload": {"score": 0.93}}
    events: list[dict[str, Any]] = []
    while len(json.dumps(events)) < size - 200:
        events.append({**event, "event_id": str(uuid.uuid4())})
    return json.dumps({"schema_version": 1, "db_type": "clickhouse", "events": events}).encode()


def _consumer(durable: str) -> ConsumerConfig:
    """The sink worker's consumer settings (worker.consumer_config with the default StreamSettings)."""
    return ConsumerConfig(
        durable_name=durable,
        ack_policy=AckPolicy.EXPLICIT,
        deliver_policy=DeliverPolicy.ALL,
        ack_wait=60.0,
        max_deliver=-1,
        filter_subject=SUBJECT,
        max_ack_pending=1000,
    )


class NoOpSink:
    """Takes the bodies of one fetch and does nothing with them (counts them)."""

    def __init__(self) -> None:
        self.count = 0

    async def write(self, bodies: list[bytes]) -> None:
        self.count += len(bodies)


async def plain_nats(url: str, n: int, batch: int, durable: str) -> float:
    """A: the worker's loop in plain nats-py; messages per second."""
    nc = await nats.connect(url)
    js = nc.jetstream()
    sink = NoOpSink()
    try:
        start = time.perf_counter()
        sub = await js.pull_subscribe(SUBJECT, durable=durable, stream=STREAM, config=_consumer(durable))
        while sink.count < n:
            try:
                msgs = await sub.fetch(batch, timeout=FETCH_TIMEOUT_S)
            except (NatsTimeoutError, TimeoutError):
                continue
            await sink.write([m.data for m in msgs])
            await asyncio.gather(*(m.ack_sync() for m in msgs))
        elapsed = time.perf_counter() - start
        await sub.unsubscribe()
    finally:
        await nc.drain()
    return n / elapsed


async def _raw_messages(message: StreamMessage[Any]) -> list[Msg]:
    return list(message.raw_message)


async def faststream(url: str, n: int, batch: int, durable: str, **broker_options: Any) -> float:
    """B and C: a FastStream batch pull subscriber with manual ack; messages per second."""
    broker = make_broker(NatsSettings(url=url), name="bench-faststream", **broker_options)
    sink = NoOpSink()
    done = asyncio.Event()

    @broker.subscriber(
        SUBJECT,
        stream=JStream(STREAM, declare=False),
        durable=durable,
        config=_consumer(durable),
        pull_sub=PullSub(batch, timeout=FETCH_TIMEOUT_S, batch=True),
        ack_policy=HandlerAck.MANUAL,
        decoder=_raw_messages,
    )
    async def handle(msgs: Any) -> None:
        await sink.write([m.data for m in msgs])
        await asyncio.gather(*(m.ack_sync() for m in msgs))
        if sink.count >= n:
            done.set()

    await broker.connect()
    try:
        start = time.perf_counter()
        await broker.start()
        await done.wait()
        elapsed = time.perf_counter() - start
    finally:
        await stop_broker(broker, 10)
    return n / elapsed


async def fill(url: str, n: int, body: bytes) -> None:
    nc = await nats.connect(url)
    js = nc.jetstream()
    await js.add_stream(name=STREAM, subjects=[SUBJECT])
    window = 256
    for first in range(0, n, window):
        acks = [await js.publish_async(SUBJECT, body) for _ in range(min(window, n - first))]
        await asyncio.gather(*acks)
    info = await js.stream_info(STREAM)
    assert info.state.messages == n, info.state
    await nc.drain()


async def main(args: argparse.Namespace) -> None:
    with started_nats_server() as server:  # JetStream on, in its own temp dir
        url = server.url
        body = _body(args.body_bytes)
        await fill(url, args.messages, body)
        print(
            f"{args.messages} messages of {len(body)} bytes in stream {STREAM}; fetch batch {args.batch}; "
            f"{args.rounds} rounds, best kept"
        )
        ways: dict[str, Callable[[str], Awaitable[float]]] = {
            "A plain nats-py (the worker's loop)": lambda d: plain_nats(url, args.messages, args.batch, d),
            "B FastStream PullSub(batch=True), service broker": lambda d: faststream(
                url, args.messages, args.batch, d
            ),
            "C FastStream PullSub(batch=True), no FastDepends, no log": lambda d: faststream(
                url, args.messages, args.batch, d, apply_types=False, logger=None
            ),
        }
        best: dict[str, float] = {}
        for round_ in range(args.rounds):
            for i, (name, way) in enumerate(ways.items()):
                rate = await way(f"bench-{round_}-{i}")
                best[name] = max(best.get(name, 0.0), rate)
                print(f"  round {round_ + 1} {name}: {rate:,.0f} msg/s")
        print()
        baseline = best["A plain nats-py (the worker's loop)"]
        for name, rate in best.items():
            print(f"{name}: {rate:,.0f} msg/s, ratio to A {rate / baseline:.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=16, help="the worker's JETSTREAM__FETCH_BATCH")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--body-bytes", type=int, default=2048)
    asyncio.run(main(parser.parse_args()))
