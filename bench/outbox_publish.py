"""Benchmark: the outbox relay's JetStream publish in plain nats-py against FastStream's publish (issue 15).
Not a test: run it by hand.

    nice -n 10 .venv/bin/python bench/outbox_publish.py [--messages 5000] [--rounds 3] [--body-bytes 600]

Starts its own nats-server (``stockade.testing.nats.started_nats_server``, JetStream in a temp dir) and one stream,
then publishes ``--messages`` events of ``--body-bytes`` (an event envelope's size), each with its own
``Nats-Msg-Id`` and schema-version header as the relay sends them, one after the other awaiting each
acknowledgement (the relay marks a row sent only after its ack), in these ways, alternated for ``--rounds``:

A. baseline, the relay's call (``stockade.runtime.outbox.OutboxRelay``): ``nc.jetstream().publish(subject,
   body, headers=..., timeout=...)`` on the service's connection;
B. FastStream: ``broker.publish(body, subject, headers=..., stream=..., timeout=...)`` on the service's broker
   (``stockade.runtime.bus.make_broker``);
C. FastStream's declared publisher: ``broker.publisher(subject, stream=...)`` then ``publisher.publish(...)``.

Throughput is acknowledged publishes per second; the best round of each is kept. The ratios against A are
printed last (1.00 = as fast as plain nats-py). Every publish is checked to be stored once (the stream's message
count at the end of each round equals the messages sent in it).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import time
import uuid
from collections.abc import Awaitable, Callable

import nats
from faststream.nats import JStream
from nats.js.errors import NotFoundError

from stockade.contracts.headers import MSG_ID, SCHEMA_VERSION
from stockade.runtime.bus import connect_broker, make_broker, stop_broker
from stockade.runtime.settings import NatsSettings
from stockade.testing.nats import started_nats_server

STREAM, SUBJECT = "BENCH_OUTBOX", "bench.outbox.published.v1"
TIMEOUT_S = 5.0

Publish = Callable[[bytes, dict[str, str]], Awaitable[object]]


def _headers() -> dict[str, str]:
    return {MSG_ID: str(uuid.uuid4()), SCHEMA_VERSION: "1"}


async def _timed(n: int, body: bytes, publish: Publish) -> float:
    start = time.perf_counter()
    for _ in range(n):
        await publish(body, _headers())
    return n / (time.perf_counter() - start)


async def plain(url: str, n: int, body: bytes) -> float:
    nc = await nats.connect(url)
    try:
        js = nc.jetstream()

        async def publish(data: bytes, headers: dict[str, str]) -> object:
            return await js.publish(SUBJECT, data, headers=headers, timeout=TIMEOUT_S)

        return await _timed(n, body, publish)
    finally:
        await nc.close()


async def faststream(url: str, n: int, body: bytes, *, declared: bool) -> float:
    settings = NatsSettings(url=url)
    broker = make_broker(settings, name="bench")
    stream = JStream(STREAM, declare=False)
    publisher = broker.publisher(SUBJECT, stream=stream) if declared else None
    await connect_broker(broker, settings)
    await broker.start()
    try:
        if publisher is not None:

            async def publish(data: bytes, headers: dict[str, str]) -> object:
                return await publisher.publish(data, headers=headers, timeout=TIMEOUT_S)

        else:

            async def publish(data: bytes, headers: dict[str, str]) -> object:
                return await broker.publish(data, SUBJECT, headers=headers, stream=STREAM, timeout=TIMEOUT_S)

        return await _timed(n, body, publish)
    finally:
        await stop_broker(broker, 5.0)


async def stored(url: str) -> int:
    nc = await nats.connect(url)
    try:
        info = await nc.jetstream().stream_info(STREAM)
        return int(info.state.messages)
    finally:
        await nc.close()


async def purge(url: str) -> None:
    nc = await nats.connect(url)
    try:
        js = nc.jetstream()
        with contextlib.suppress(NotFoundError):  # the first round: no stream yet
            await js.delete_stream(STREAM)
        await js.add_stream(name=STREAM, subjects=[SUBJECT], duplicate_window=120.0)
    finally:
        await nc.close()


async def main(args: argparse.Namespace) -> None:
    with started_nats_server() as server:  # JetStream on, in its own temp dir
        url = server.url
        body = b"x" * args.body_bytes
        ways: dict[str, Callable[[], Awaitable[float]]] = {
            "A nats-py js.publish (relay)": lambda: plain(url, args.messages, body),
            "B FastStream broker.publish": lambda: faststream(url, args.messages, body, declared=False),
            "C FastStream declared publisher": lambda: faststream(url, args.messages, body, declared=True),
        }
        best = dict.fromkeys(ways, 0.0)
        for round_ in range(1, args.rounds + 1):
            for name, run in ways.items():
                await purge(url)
                rate = await run()
                count = await stored(url)
                assert count == args.messages, f"{name}: {count} stored of {args.messages}"
                best[name] = max(best[name], rate)
                print(
                    f"round {round_}: {name}: {rate:,.0f} publishes/s ({count} stored once each)", flush=True
                )
        baseline = best["A nats-py js.publish (relay)"]
        print(
            f"\n{args.messages} publishes of {args.body_bytes} B, awaiting each ack; best of {args.rounds}:"
        )
        for name, rate in best.items():
            print(f"  {name}: {rate:,.0f} publishes/s, ratio to A {rate / baseline:.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--body-bytes", type=int, default=600)
    asyncio.run(main(parser.parse_args()))
