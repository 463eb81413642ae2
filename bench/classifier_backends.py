"""Cost of the classification check's pluggable backends against the shipped classifier, in the same run.

Texts: ``--n`` benign and ``--n`` attack texts (injection, jailbreak) of the labelled sources (bench/data), at
most 1,500 characters, fixed seed. Every configuration runs the same texts one after another on this machine:

- ``classifier``: the shipped classifier check alone (the baseline);
- ``+ judge always``: the LLM judge on every text, through the openai provider, against a local server on
  127.0.0.1 that answers at once (``--judge-latency-ms`` adds a fixed model latency there): what the judge
  costs here besides the judge model itself;
- ``+ judge when_unsure``: the judge only for texts whose classifier score is in the band (default [0.2, 0.98));
- ``remote``: the same classifier hosted behind a local HTTP server speaking the toxicity service's wire
  protocol (``classification.remote``): the service hop's cost (the server shares these cores).

It prints per configuration the median and p95 milliseconds per text, the ratio to the baseline, how many
texts the judge read and the judge's tokens per call (the provider's reported usage is fixed by the server, so
the count printed is the library's own estimate of the request, one token per four characters).

    .venv/bin/python bench/classifier_backends.py [--n 40] [--judge-latency-ms 0] [--model-path DIR]

``--model-path`` adds a row for a converted Hugging Face model (``model_path``) on the same texts.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from classifier_data import load_all

from stockade.guardrails.checks.base import CheckContext, ContentCheck
from stockade.guardrails.checks.classification.backend_config import JudgeConfig
from stockade.guardrails.checks.classification.judge import LLMJudge
from stockade.guardrails.checks.classification.judged_check import JudgedCheck
from stockade.guardrails.checks.classification.model import default_model_dir, load
from stockade.guardrails.checks.classification.model_check import ModelClassificationCheck
from stockade.guardrails.checks.config import ClassificationConfig, Stage
from stockade.guardrails.policies.tokens import ApproximateTokenCounter


def texts(n: int, seed: int = 11) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    pool = [e for e in load_all() if len(e.text) <= 1500]
    benign = [e for e in pool if e.label == "benign"]
    attacks = [e for e in pool if e.label in ("injection", "jailbreak")]
    return [(e.label, e.text) for e in rng.sample(benign, n) + rng.sample(attacks, n)]


@contextmanager
def serve(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _reply(handler: BaseHTTPRequestHandler, payload: Any) -> None:
    raw = json.dumps(payload).encode()
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(raw)))
    handler.end_headers()
    handler.wfile.write(raw)


def judge_handler(latency_s: float) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            if latency_s:
                time.sleep(latency_s)
            text = '{"verdict": "safe", "category": "none", "confidence": 0.9}'
            _reply(
                self,
                {
                    "id": "c",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body["model"],
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": text},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                },
            )

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


def classifier_handler() -> type[BaseHTTPRequestHandler]:
    model = load(str(default_model_dir()))

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            out = []
            for text in body["inputs"]:
                probs = model.score(text, max_windows=1024).probs
                out.append([{"label": k, "score": min(1.0, max(0.0, v))} for k, v in probs.items()])
            _reply(self, out)

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


async def interleaved(checks: dict[str, Any], items: list[tuple[str, str]]) -> dict[str, list[float]]:
    """Milliseconds per text of each check (a ContentCheck, or a callable taking the text); the checks take
    turns text by text, in a rotating order, so drift on a shared machine reaches all of them alike."""
    ctx = CheckContext(stage=Stage.INPUT)
    names = list(checks)
    out: dict[str, list[float]] = {n: [] for n in names}
    for name in names:
        await _call(checks[name], "warm up", ctx)
    for i, (_, text) in enumerate(items):
        for name in names[i % len(names) :] + names[: i % len(names)]:
            start = time.perf_counter()
            await _call(checks[name], text, ctx)
            out[name].append((time.perf_counter() - start) * 1000.0)
    return out


async def _call(check: Any, text: str, ctx: CheckContext) -> Any:
    return await (check.run(text, ctx) if isinstance(check, ContentCheck) else check(text))


def row(name: str, times: list[float], base: float, extra: str = "") -> None:
    p50 = statistics.median(times)
    p95 = sorted(times)[int(0.95 * (len(times) - 1))]
    print(f"{name:<24} {p50:8.1f} {p95:8.1f} {p50 / base:7.2f}  {extra}")


async def main() -> None:
    os.environ.setdefault("OPENAI_API_KEY", "sk-local-bench")  # the local judge server ignores it
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=40, help="benign and attack texts each")
    ap.add_argument("--judge-latency-ms", type=float, default=0.0, help="model latency the judge server adds")
    ap.add_argument("--band", type=float, nargs=2, default=(0.2, 0.98))
    ap.add_argument("--model-path", help="also time this model_path directory (stockade convert-classifier)")
    args = ap.parse_args()
    items = texts(args.n)
    print(
        f"{len(items)} texts ({args.n} benign, {args.n} attacks), mean {statistics.mean(len(t) for _, t in items):.0f} chars"
    )
    base_check = ModelClassificationCheck(ClassificationConfig())
    ctx = CheckContext(stage=Stage.INPUT)
    scores = [(await base_check.run(t, ctx)).score for _, t in items]
    low, high = args.band
    in_band = sum(low <= s < high for s in scores)
    benign_band = sum(
        low <= s < high for (label, _), s in zip(items, scores, strict=True) if label == "benign"
    )
    counter = ApproximateTokenCounter()
    with (
        serve(judge_handler(args.judge_latency_ms / 1000.0)) as judge_url,
        serve(classifier_handler()) as tox_url,
    ):
        model = {"provider": "openai", "model": "judge", "base_url": f"{judge_url}/v1", "max_retries": 0}
        judge = LLMJudge(JudgeConfig.model_validate({"model": model}))
        checks: dict[str, Any] = {"classifier": base_check, "judge call alone": judge.judge}
        for mode in ("always", "when_unsure"):
            config = JudgeConfig.model_validate({"model": model, "mode": mode, "band": args.band})
            checks[f"+ judge {mode}"] = JudgedCheck(ModelClassificationCheck(ClassificationConfig()), config)
        remote = ClassificationConfig(remote={"url": f"{tox_url}/classify"})
        checks["remote (same model)"] = ModelClassificationCheck(remote)
        if args.model_path:
            checks["model_path"] = ModelClassificationCheck(ClassificationConfig(model_path=args.model_path))
        times = await interleaved(checks, items)
        tokens = [counter.count_request(judge.request(t)) for _, t in items]
        prompt_only = counter.count_request(judge.request(""))
    base50 = statistics.median(times["classifier"])
    print(f"{'configuration':<24} {'p50 ms':>8} {'p95 ms':>8} {'x base':>7}")
    notes = {
        "+ judge always": f"judge read {len(items)}/{len(items)}",
        "+ judge when_unsure": f"judge read {in_band}/{len(items)}",
    }
    for name, values in times.items():
        row(name, values, base50, notes.get(name, ""))
    print(
        f"classifier scores in band [{low}, {high}): {in_band}/{len(items)} ({benign_band}/{args.n} benign)"
    )
    print(
        f"judge request tokens (estimate): mean {statistics.mean(tokens):.0f}, max {max(tokens)}; "
        f"the prompt alone {prompt_only}"
    )


if __name__ == "__main__":
    asyncio.run(main())
