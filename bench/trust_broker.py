"""Benchmark of the trust-broker (issue 6). Not a test: run it by hand.

    .venv/bin/python bench/trust_broker.py [--messages 20000] [--latency-samples 2000]

Measures, in one run and against one nats-server (the pip binary, JetStream on, started here):

1. verify_message() calls per second in-process (AgentTrustEnforcer, in-memory nonce store, 1 kB payloads).
2. End to end (sender -> trust-broker -> receiver), 1 kB payloads, the broker as its own process
   (``python -m stockade.trust_broker``, JetStream nonce bucket): verified messages per second with a window
   of in-flight messages, and the latency of single messages (p50/p99).
3. The same through a plain forwarder process (the broker's app shape: FastStream for lifespan and health, the
   submissions on the same ConcurrentSubscription, queue group and in-flight bound; no verification): the
   baseline. "Added latency" is broker minus baseline at each percentile.
4. Replays: every envelope of a batch is sent twice; the number of duplicates the receiver got must be 0.
5. Layer D (content re-validation, ``TRUST_BROKER_CONTENT_VALIDATION__ENABLED``): verify_message() in-process
   with the broker's validator (``build_content_validator``: the default checks without PII) against the same
   enforcer without it (layers A-C), on the same 1 kB agent messages in the same run: calls/s, p50/p99 per
   call and the ratio A-D / A-C.

The ratio broker/plain forwarding is printed last.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import nats
import uvloop
import yaml

from stockade.contracts import subjects
from stockade.contracts.nats_sync import sync_with_server
from stockade.guardrails.trust import AgentTrustEnforcer, AttestationVerifier, KeyRing, trust_config_from_dict

PAYLOAD_BYTES = 1024
FLUSH_EVERY = 100
SECRET = "s" * 32
TRUST_DOC: dict[str, Any] = {
    "guardrails": {
        "trust": {
            "attestation": {"freshness_window_s": 120, "clock_skew_s": 5},
            "agents": [
                {
                    "id": "sender",
                    "trust": "trusted",
                    "capabilities": ["work"],
                    "keys": [{"id": "k1", "secret": SECRET}],
                },
                {"id": "receiver", "trust": "trusted", "keys": [{"id": "k1", "secret": SECRET}]},
            ],
        }
    }
}
ATTESTATION_HEADER = "Stockade-Attestation"
NONCE_HEADER = "Stockade-Nonce"
VENV_BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def payload(i: int) -> bytes:
    head = f'{{"i":{i},"pad":"'.encode()
    return head + b"x" * (PAYLOAD_BYTES - len(head) - 2) + b'"}'


# --- 1. in-process -----------------------------------------------------------------------------------------


async def bench_verify_in_process(n: int) -> float:
    enforcer = AgentTrustEnforcer.from_config(trust_config_from_dict(TRUST_DOC), receiver="receiver")
    # The broker's input: the envelope's JSON as it arrives in the header, and the payload bytes.
    signed = [
        (enforcer.sign("sender", "receiver", payload(i), capability="work").to_json(), payload(i))
        for i in range(n)
    ]
    start = time.perf_counter()
    for env, body in signed:
        result = await enforcer.verify_message(env, body)
        assert result.passed, result.error
    return n / (time.perf_counter() - start)


SENTENCES = (
    "Summarize the attached quarterly report for the finance team and list the three largest cost changes.",
    "The customer asked whether the order shipped; look up tracking number and reply with the expected date.",
    "Draft a short status update for the migration: databases moved, two services left, no incidents so far.",
    "Compare the two vendor quotes and recommend one, noting support terms and the delivery schedule.",
)


def agent_message(i: int) -> bytes:
    """About 1 kB of ordinary agent-to-agent text (the classifier reads words, not padding)."""
    text, k = "", i
    while len(text) < PAYLOAD_BYTES - 40:
        text += SENTENCES[k % len(SENTENCES)] + " "
        k += 1
    return json.dumps({"i": i, "task": text.strip()}).encode()


async def bench_layer_d(n: int) -> dict[str, float]:
    """verify_message() with layers A-C, then A-D, over the same messages (fresh nonces for each pass)."""
    from stockade.trust_broker.content import ContentValidationSettings, build_content_validator

    config = trust_config_from_dict(TRUST_DOC)
    validator = await build_content_validator(ContentValidationSettings(enabled=True))
    out: dict[str, float] = {}
    for name, wired in (("a_c", None), ("a_d", validator)):
        enforcer = AgentTrustEnforcer.from_config(config, receiver="receiver", content_validator=wired)
        times: list[float] = []
        for i in range(n):  # signed just before verifying: a slow pass must not age the envelopes out
            body = agent_message(i)
            env = enforcer.sign("sender", "receiver", body, capability="work").to_json()
            t0 = time.perf_counter()
            result = await enforcer.verify_message(env, body)
            times.append(time.perf_counter() - t0)
            assert result.passed, result.error
        total = sum(times)
        out[f"{name}_rate"] = n / total
        qs = statistics.quantiles(times, n=100)
        out[f"{name}_p50_ms"], out[f"{name}_p99_ms"] = qs[49] * 1e3, qs[98] * 1e3
    return out


# --- processes ---------------------------------------------------------------------------------------------


class Servers:
    def __init__(self) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="bench-trust-"))
        self.procs: list[subprocess.Popen[bytes]] = []
        self.port = free_port()
        self.url = f"nats://127.0.0.1:{self.port}"

    def start_nats(self) -> None:
        binary = shutil.which("nats-server", path=str(VENV_BIN)) or "nats-server"
        argv = [binary, "-a", "127.0.0.1", "-p", str(self.port), "-js", "-sd", str(self.tmp / "js")]
        self.procs.append(subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.02)
        raise RuntimeError("nats-server did not start")

    def start_broker(self, nonce_store: str, in_flight: int) -> subprocess.Popen[bytes]:
        config = self.tmp / "trust.yaml"
        config.write_text(yaml.safe_dump(TRUST_DOC))
        env = {
            **os.environ,
            "TRUST_BROKER_CONFIG_PATH": str(config),
            "TRUST_BROKER_NATS__URL": self.url,
            "TRUST_BROKER_LOG__LEVEL": "WARNING",
            "TRUST_BROKER_NONCE_STORE": nonce_store,
            "TRUST_BROKER_MAX_WORKERS": str(in_flight),
            # /metrics of each replica on its own port (two on the default 8105 collide)
            "TRUST_BROKER_HTTP__PORT": str(free_port()),
        }
        proc = subprocess.Popen([sys.executable, "-m", "stockade.trust_broker"], env=env)
        self.procs.append(proc)
        return proc

    def start_forwarder(self, in_flight: int) -> subprocess.Popen[bytes]:
        argv = [sys.executable, __file__, "--forwarder", self.url, "--in-flight", str(in_flight)]
        proc = subprocess.Popen(argv)
        self.procs.append(proc)
        return proc

    def stop(self, proc: subprocess.Popen[bytes]) -> None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()

    def stop_all(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                self.stop(proc)
        shutil.rmtree(self.tmp, ignore_errors=True)


async def run_forwarder(url: str, max_in_flight: int) -> None:
    """Baseline: the trust-broker's app shape (FastStream for lifespan and health, the submissions on the same
    ConcurrentSubscription with the same in-flight bound and queue group), forwarding without verifying."""
    from faststream.nats import NatsBroker
    from nats.aio.msg import Msg

    from stockade.runtime.nats import install_stop_signals
    from stockade.trust_broker.dispatch import ConcurrentSubscription

    broker = NatsBroker(url, logger=None, apply_types=False)  # as the trust-broker

    async def forward(msg: Msg) -> None:
        receiver = subjects.receiver_of_submit(msg.subject)
        env = json.loads((msg.headers or {}).get(ATTESTATION_HEADER, "{}"))
        nc = broker.connection  # the same publishing path as the trust-broker
        await nc.publish(
            subjects.agent_inbox(receiver), msg.data, headers={NONCE_HEADER: env.get("nonce", "")}
        )
        if msg.reply:
            await nc.publish(msg.reply, b'{"status": "delivered"}')

    @broker.subscriber(subjects.TRUST_HEALTH)
    async def health(_: Any) -> dict[str, str]:
        return {"status": "ok"}

    submissions = ConcurrentSubscription(
        subjects.TRUST_SUBMIT_WILDCARD, subjects.TRUST_BROKER_QUEUE, forward, max_in_flight=max_in_flight
    )
    stop = asyncio.Event()
    install_stop_signals(stop)
    await broker.start()
    await submissions.start(broker.connection)
    await stop.wait()
    await submissions.stop()
    await broker.stop()


# --- 2/3. end to end ---------------------------------------------------------------------------------------


async def wait_healthy(nc: Any, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            reply = await nc.request(subjects.TRUST_HEALTH, b"", timeout=0.5)
            if json.loads(reply.data).get("status") == "ok":
                return
        except Exception:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.1)


async def end_to_end(url: str, messages: int, latency_samples: int, window: int) -> dict[str, Any]:
    verifier = AttestationVerifier(KeyRing({"sender": {"k1": SECRET}}))
    sender = await nats.connect(url, pending_size=64 * 1024 * 1024)
    receiver = await nats.connect(url)
    try:
        await wait_healthy(sender)
        arrivals: dict[str, float] = {}
        duplicates = 0
        got = asyncio.Event()
        expected = 0
        slots: asyncio.Semaphore | None = None

        async def on_message(msg: Any) -> None:
            nonlocal duplicates, slots
            nonce = (msg.headers or {}).get(NONCE_HEADER, "")
            if nonce in arrivals:
                duplicates += 1
            arrivals[nonce] = time.perf_counter()
            if slots is not None:
                slots.release()
            if len(arrivals) >= expected:
                got.set()

        await receiver.subscribe(
            subjects.agent_inbox("receiver"), cb=on_message, pending_msgs_limit=1_000_000
        )
        await sync_with_server(receiver)
        subject = subjects.trust_submit("receiver")

        def sign(i: int) -> tuple[str, dict[str, str], bytes]:
            body = payload(i)
            env = verifier.sign("sender", "receiver", body, capability="work")
            return env.nonce, {ATTESTATION_HEADER: env.to_json()}, body

        # Warm-up (JIT-free Python still has caches, connections, the KV bucket).
        expected = 200
        for i in range(200):
            _, headers, body = sign(i)
            await sender.publish(subject, body, headers=headers)
        await asyncio.wait_for(got.wait(), 30)

        # Throughput: pipelined publishes (no wait per message, a flush every FLUSH_EVERY), at most `window`
        # messages between the sender and the receiver.
        batch = [sign(i) for i in range(messages)]
        arrivals.clear()
        got.clear()
        expected = messages
        slots = asyncio.Semaphore(window)
        start = time.perf_counter()
        for n, (_, headers, body) in enumerate(batch, 1):
            await slots.acquire()
            await sender.publish(subject, body, headers=headers)
            if n % FLUSH_EVERY == 0:
                await sender.flush()  # back-pressure only: ordering does not matter here
        await asyncio.wait_for(got.wait(), 120)
        throughput = messages / (time.perf_counter() - start)
        slots = None

        # Latency: one message at a time.
        latencies = []
        for i in range(latency_samples):
            nonce, headers, body = sign(i)
            arrivals.clear()
            got.clear()
            expected = 1
            sent = time.perf_counter()
            await sender.publish(subject, body, headers=headers)
            await asyncio.wait_for(got.wait(), 10)
            latencies.append((arrivals[nonce] - sent) * 1000)
        latencies.sort()

        # Replays: every envelope twice; a verifying broker must deliver each once.
        replay_batch = [sign(i) for i in range(500)]
        arrivals.clear()
        got.clear()
        duplicates = 0
        expected = len(replay_batch)
        for _, headers, body in replay_batch + replay_batch:
            await sender.publish(subject, body, headers=headers)
        await asyncio.wait_for(got.wait(), 30)
        await asyncio.sleep(0.5)
        return {
            "throughput": throughput,
            "p50_ms": statistics.median(latencies),
            "p99_ms": latencies[int(len(latencies) * 0.99) - 1],
            "replays_accepted": duplicates,
        }
    finally:
        await sender.close()
        await receiver.close()


async def main(args: argparse.Namespace) -> None:
    load = os.getloadavg()[0]
    verify_rate = await bench_verify_in_process(args.verify_calls)
    print(
        f"verify_message() in-process: {verify_rate:,.0f} calls/s ({args.verify_calls} calls, 1 kB payloads)"
    )
    d = await bench_layer_d(args.layer_d_calls)
    for name, key in (("A-C", "a_c"), ("A-D", "a_d")):
        print(
            f"verify_message() layers {name}: {d[key + '_rate']:,.0f} calls/s; per call p50 "
            f"{d[key + '_p50_ms']:.3f} ms, p99 {d[key + '_p99_ms']:.3f} ms ({args.layer_d_calls} 1 kB agent messages)"
        )
    print(
        f"ratio layers A-D / A-C (calls/s): {d['a_d_rate'] / d['a_c_rate']:.4f}; "
        f"load average now: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )
    if args.layer_d_only:
        return
    servers = Servers()
    try:
        servers.start_nats()
        forwarders = [servers.start_forwarder(args.in_flight) for _ in range(args.replicas)]
        plain = await end_to_end(servers.url, args.messages, args.latency_samples, args.window)
        for proc in forwarders:
            servers.stop(proc)
        brokers = [servers.start_broker(args.nonce_store, args.in_flight) for _ in range(args.replicas)]
        verified = await end_to_end(servers.url, args.messages, args.latency_samples, args.window)
        for proc in brokers:
            servers.stop(proc)
    finally:
        servers.stop_all()
    print(
        f"trust-broker nonce store: {args.nonce_store}; {args.replicas} replica(s) of the broker and of the "
        f"forwarder; machine load average before the run: {load:.1f}, after: {os.getloadavg()[0]:.1f}"
    )
    for name, r in (("plain forwarding", plain), ("trust-broker", verified)):
        print(
            f"{name:17s}: {r['throughput']:8,.0f} msg/s end to end; latency p50 {r['p50_ms']:.2f} ms, "
            f"p99 {r['p99_ms']:.2f} ms; duplicates delivered when every envelope is sent twice: "
            f"{r['replays_accepted']}"
        )
    print(
        f"added latency by verification: p50 {verified['p50_ms'] - plain['p50_ms']:+.2f} ms, "
        f"p99 {verified['p99_ms'] - plain['p99_ms']:+.2f} ms"
    )
    print(f"replays accepted by the trust-broker: {verified['replays_accepted']}")
    print(
        f"ratio trust-broker / plain forwarding (msg/s): {verified['throughput'] / plain['throughput']:.2f}"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--latency-samples", type=int, default=2_000)
    parser.add_argument("--verify-calls", type=int, default=20_000)
    parser.add_argument(
        "--window", type=int, default=1_000, help="max messages in flight in the throughput run"
    )
    parser.add_argument(
        "--nonce-store", choices=["jetstream", "memory"], default="jetstream", help="the broker's nonce store"
    )
    parser.add_argument(
        "--in-flight", type=int, default=256, help="messages the broker (and the forwarder) handle at once"
    )
    parser.add_argument(
        "--replicas",
        type=int,
        default=2,
        help="broker (and forwarder) processes in the queue group (default 2: one per core of the 2-core machine)",
    )
    parser.add_argument(
        "--asyncio",
        action="store_true",
        help="the default event loop here (the processes started keep uvloop)",
    )
    parser.add_argument(
        "--layer-d-calls", type=int, default=300, help="verify_message() calls with and without layer D"
    )
    parser.add_argument("--layer-d-only", action="store_true", help="parts 1 and 5 only (no NATS)")
    parser.add_argument("--forwarder", metavar="URL", help=argparse.SUPPRESS)
    parsed = parser.parse_args()
    # uvloop for every process of the run (forwarder, sender/receiver), as the trust-broker uses it.
    run = asyncio.run if parsed.asyncio else uvloop.run
    if parsed.forwarder:
        run(run_forwarder(parsed.forwarder, parsed.in_flight))
    else:
        run(main(parsed))
