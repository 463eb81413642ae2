"""Training the head on windows with a short attack inside ordinary prose: does it separate attacks planted in
long documents? Held out, paired with the shipped head. Not a timed test; the shipped model is not changed.

The head reads the int8 graph's pooled vector (mean of layers 4-6, ``/Concat_output_0``); a warm-started copy of
the shipped head (dequantised) is fine-tuned on 64-token prose windows with a short attack (``--attack-tokens``)
inside, labelled with the attack's class, beside the same windows without it (benign), plus the training attacks
read alone with the shipped head's probabilities as soft targets. Whole sources held out on both sides:
calibrate_decision.py's two benign host groups x two attack groups (``source_folds``; evaluation-only attack
sources measured, never trained on); four heads, each planted document scored by the head trained on the other
host and attack group. Documents: calibrate_decision.py's clean 20/100 kB ones (same seeds) and, per clean
document, ``--planted`` attacks of each attack group; read as the check reads them (the screener's 16 windows,
decoded views left out for both). Thresholds per bucket at each preset's budget, source-weighted, set on the
other host group's clean documents scored by the same head, both ways round; AUC is threshold-free.

    nice -n 10 .venv/bin/python bench/planted_windows.py   # pooled vectors cached in /tmp/stockade-bench/planted
"""

from __future__ import annotations

import argparse
import pickle
import random
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
from calibrate_decision import PRESETS, build, plant, weighted_threshold, wilson
from classifier_data import EVAL_ONLY, LABELS, cap_per_source, load_all, source_folds
from window_scores import model_dir

from stockade.guardrails.checks.classification.model import load
from stockade.guardrails.checks.classification.windows import pick_windows, window_starts

CACHE = Path("/tmp/stockade-bench/planted")
BUCKETS = ("20kB", "100kB")


class Graph:
    """The shipped int8 graph with its pooled vector exposed, and the shipped head as float weights."""

    def __init__(self, directory: Path) -> None:
        import onnx
        import onnxruntime as ort
        from onnx import numpy_helper

        m = onnx.load(str(directory / "model.onnx"))
        init = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}

        def deq(name: str) -> np.ndarray:
            q, s, z = (init[f"{name}_{k}"] for k in ("quantized", "scale", "zero_point"))
            return (q.astype(np.float32) - z.astype(np.float32)) * s.astype(np.float32)

        self.head = {
            "w0": deq("top.out.0.weight_Transposed"),
            "b0": init["top.out.0.bias"].astype(np.float32),
            "w1": deq("top.out.3.weight_Transposed"),
            "b1": init["top.out.3.bias"].astype(np.float32),
        }
        m.graph.output.append(
            onnx.helper.make_tensor_value_info("/Concat_output_0", onnx.TensorProto.FLOAT, None)
        )
        opts = ort.SessionOptions()
        opts.intra_op_num_threads, opts.inter_op_num_threads = 2, 1
        self.session = ort.InferenceSession(m.SerializeToString(), opts, providers=["CPUExecutionProvider"])

    def pooled(self, rows: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
        """(pooled vectors, the graph's own probabilities) per 62-token row, in batches of similar length."""
        feats = np.zeros((len(rows), 1152), np.float32)
        probs = np.zeros((len(rows), len(LABELS)), np.float32)
        order = sorted(range(len(rows)), key=lambda i: len(rows[i]))
        for k in range(0, len(order), 32):
            idx = order[k : k + 32]
            width = max(len(rows[i]) for i in idx) + 2
            ids = np.zeros((len(idx), width), np.int64)
            mask = np.zeros_like(ids)
            for r, i in enumerate(idx):
                seq = [101, *rows[i], 102]
                ids[r, : len(seq)], mask[r, : len(seq)] = seq, 1
            p, f = self.session.run(["probs", "/Concat_output_0"], {"input_ids": ids, "attention_mask": mask})
            feats[idx], probs[idx] = f, p
        return feats, probs


def head_probs(h: dict[str, np.ndarray], x: np.ndarray) -> np.ndarray:
    from scipy.special import erf, softmax

    a = x @ h["w0"] + h["b0"]
    a = 0.5 * a * (1.0 + erf(a / np.sqrt(2.0)))
    return np.asarray(softmax(a @ h["w1"] + h["b1"], axis=1))


def fine_tune(
    h0: dict[str, np.ndarray],
    x: np.ndarray,
    y: np.ndarray,
    xs: np.ndarray,
    ps: np.ndarray,
    epochs: int,
    seed: int,
    lr: float,
) -> dict[str, np.ndarray]:
    """Warm-started copy of the head: cross-entropy on (x, y), KL to the shipped head's ``ps`` on ``xs``, an L2
    pull towards the shipped weights."""
    import torch

    torch.manual_seed(seed)
    p = {k: torch.nn.Parameter(torch.from_numpy(v.copy())) for k, v in h0.items()}
    ref = {k: torch.from_numpy(v.copy()) for k, v in h0.items()}
    opt = torch.optim.Adam(p.values(), lr=lr)
    X, Y = torch.from_numpy(x), torch.from_numpy(y)
    XS, PS = torch.from_numpy(xs), torch.from_numpy(ps)

    def logits(v: Any) -> Any:
        return torch.nn.functional.gelu(v @ p["w0"] + p["b0"]) @ p["w1"] + p["b1"]

    g = torch.Generator().manual_seed(seed)
    for _ in range(epochs):
        for b in torch.randperm(len(X), generator=g).split(64):
            s = torch.randint(0, len(XS), (64,), generator=g)
            loss = torch.nn.functional.cross_entropy(logits(X[b]), Y[b])
            loss = loss + torch.nn.functional.kl_div(
                torch.log_softmax(logits(XS[s]), 1), PS[s], reduction="batchmean"
            )
            loss = loss + 1e-3 * sum(((p[k] - ref[k]) ** 2).sum() for k in p)
            opt.zero_grad()
            loss.backward()
            opt.step()
    return {k: v.detach().numpy() for k, v in p.items()}


def attack_score(probs: np.ndarray) -> np.ndarray:
    a = np.clip(1.0 - probs[:, 0], 1e-6, 1 - 1e-6)  # typed-attack: 1 - P(benign)
    return np.log(a / (1 - a))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--docs", type=int, default=8)
    p.add_argument("--per-source", type=int, default=40)
    p.add_argument(
        "--planted", type=int, default=1, help="attacks planted per clean document and attack group"
    )
    p.add_argument("--skip-sources", default="synth_contrast_docs,synth_contrast_requests")
    p.add_argument("--pairs", type=int, default=600, help="planted/clean window pairs per training head")
    p.add_argument("--attack-tokens", type=int, default=40)
    p.add_argument("--epochs", type=int, default=6)
    p.add_argument("--lr", type=float, default=3e-4)
    args = p.parse_args()
    CACHE.mkdir(parents=True, exist_ok=True)
    model = load(str(model_dir()))
    tok = model.tokenizer
    body, stride = model.window - 2, model.stride
    rng = random.Random(5)
    tasks, hosts = build(args)
    rows = [e for e in load_all() if e.source not in set(args.skip_sources.split(","))]
    attacks = [e for e in rows if e.label != "benign"]
    agroups = source_folds(attacks, 2)
    agroup = {s: g for g, grp in enumerate(agroups) for s in grp}
    hgroup = {s: g for g, grp in enumerate(hosts) for s in grp}

    def ids(t: str) -> list[int]:
        return list(tok.encode(t, add_special_tokens=False).ids)

    docs_path = CACHE / "docs.pickle"
    if docs_path.exists():
        docs = pickle.loads(docs_path.read_bytes())
    else:
        g = Graph(Path(model_dir()))
        pool = [e for e in cap_per_source(attacks, args.per_source, seed=3) if len(e.text) <= 1500]
        by_group: dict[int, list[Any]] = defaultdict(list)
        for e in pool:
            by_group[agroup[e.source]].append(e)
        docs = []
        for items in tasks.values():
            for text, src, bucket, label, host, _ in items:
                if bucket not in BUCKETS or host is not None or label != "benign" or src not in hgroup:
                    continue
                variants = [(text, None, None)]
                for a in (0, 1):
                    for e in rng.sample(by_group[a], args.planted):
                        variants.append((plant(text, e.text, rng), e.source, e.label))
                for t, asrc, alabel in variants:
                    tid = ids(t)
                    wins = [tid[s : s + body] for s in window_starts(len(tid), body, stride)]
                    pick = pick_windows(model.screener.attack_scores(wins), model.model_windows)
                    f, pr = g.pooled([wins[i] for i in pick])
                    docs.append(
                        {"host": src, "bucket": bucket, "attack": asrc, "label": alabel, "x": f, "graph": pr}
                    )
            print(f"documents: {len(docs)}", file=sys.stderr, flush=True)
        docs_path.write_bytes(pickle.dumps(docs))

    train_path = CACHE / f"train-{args.pairs}-{args.attack_tokens}.pickle"
    if train_path.exists():
        train = pickle.loads(train_path.read_bytes())
    else:
        g = Graph(Path(model_dir()))
        benign = cap_per_source([e for e in rows if e.label == "benign" and e.source in hgroup], 300, seed=9)
        short = [e for e in attacks if e.source not in EVAL_ONLY and e.source in agroup]
        train = {}
        for h in (0, 1):
            prose = [ids(e.text) for e in benign if hgroup[e.source] == h]
            prose = [t for t in prose if len(t) >= body]
            for a in (0, 1):
                mine = [e for e in short if agroup[e.source] == a]
                win, lab = [], []
                for _ in range(args.pairs):
                    host, e = rng.choice(prose), rng.choice(mine)
                    at = ids(e.text)[: args.attack_tokens]
                    s = rng.randrange(0, len(host) - body + 1)
                    clean = host[s : s + body]
                    cut = rng.randrange(0, body - len(at) + 1)
                    win += [clean, (clean[:cut] + at + clean[cut:])[:body]]
                    lab += [0, LABELS.index(e.label)]
                reps = [ids(e.text)[:body] for e in rng.sample(mine, min(800, len(mine)))]
                x, _ = g.pooled(win)
                xs, ps = g.pooled(reps)
                train[(h, a)] = (x, np.array(lab), xs, ps)
                print(f"training windows ({h}, {a}): {len(win)} + {len(reps)}", file=sys.stderr, flush=True)
        train["head"] = g.head
        train_path.write_bytes(pickle.dumps(train))
    report(args, docs, train, hgroup, agroup)


def report(args: Any, docs: list[Any], train: Any, hgroup: dict[str, int], agroup: dict[str, int]) -> None:
    h0 = train["head"]
    heads = {k: fine_tune(h0, *v, args.epochs, 13, args.lr) for k, v in train.items() if k != "head"}
    for d in docs:
        d["shipped"] = float(attack_score(head_probs(h0, d["x"])).max())
        d["onnx"] = float(attack_score(d["graph"]).max())
        d["new"] = {k: float(attack_score(head_probs(hd, d["x"])).max()) for k, hd in heads.items()}

    def group(bucket: str, h: int, a: int, same: bool, planted: bool) -> list[dict[str, Any]]:
        """Documents of ``bucket`` in (same) or out of (not same) host group h and, planted, attack group a."""
        return [
            d
            for d in docs
            if d["bucket"] == bucket
            and (d["attack"] is not None) == planted
            and (hgroup[d["host"]] == h) == same
            and (not planted or (agroup.get(d["attack"], -1) == a) == same)
        ]

    def auc(pos: list[float], neg: list[float]) -> float:
        p_, n_ = np.array(pos)[:, None], np.array(neg)[None, :]
        return float(np.mean((p_ > n_) + 0.5 * (p_ == n_)))

    for (h, a), (x, y, _, _) in ((k, v) for k, v in train.items() if k != "head"):
        line = f"head trained on host group {h}, attack group {a}:"
        for name, hd in (("shipped", h0), ("new", heads[(h, a)])):
            s = attack_score(head_probs(hd, x))
            line += f" {name} training-window gap {s[y > 0].mean() - s[y == 0].mean():.2f},"
            sc = (lambda d: d["shipped"]) if name == "shipped" else (lambda d, k=(h, a): d["new"][k])
            for tag, same in (("in-group", True), ("held-out", False)):
                pos, neg = group("20kB", h, a, same, True), group("20kB", h, a, same, False)
                line += f" {tag} 20kB AUC {auc([sc(d) for d in pos], [sc(d) for d in neg]):.3f}"
        print(line)
    agree = np.corrcoef([d["shipped"] for d in docs], [d["onnx"] for d in docs])[0, 1]
    print(f"float replica of the shipped head vs the int8 graph: r = {agree:.4f} over {len(docs)} documents")
    for preset, budget in PRESETS.items():
        print(f"== {preset} ({budget:.1%} of clean documents) ==")
        for bucket in BUCKETS:
            res: dict[str, list[Any]] = defaultdict(list)
            for h, a in heads:  # the head trained on host group h and attack group a
                cal, held = group(bucket, h, a, True, False), group(bucket, h, a, False, False)
                planted = group(bucket, h, a, False, True)
                for name, sc in (
                    ("shipped", lambda d: d["shipped"]),
                    ("new", lambda d, k=(h, a): d["new"][k]),
                ):
                    t = weighted_threshold(
                        np.array([sc(d) for d in cal]), [d["host"] for d in cal], budget, -1e9, 1e9
                    )
                    res[f"{name} clean"] += [sc(d) >= t for d in held]
                    res[f"{name} planted"] += [sc(d) >= t for d in planted]
                    res[f"{name} auc"].append(auc([sc(d) for d in planted], [sc(d) for d in held]))
            n_clean = len(res["shipped clean"]) // 2  # each clean document is read by two heads
            for name in ("shipped", "new"):
                fp, hp, n = (
                    np.mean(res[f"{name} clean"]),
                    np.mean(res[f"{name} planted"]),
                    len(res["new planted"]),
                )
                print(
                    f"  {bucket} {name:8s} clean flagged {fp:.3f} ({wilson(float(fp), n_clean)}, n={n_clean})"
                    f"  planted caught {hp:.3f} ({wilson(float(hp), n)}, n={n})"
                    f"  AUC planted vs held-out clean {np.mean(res[f'{name} auc']):.3f}"
                )
            a_, b_ = res["shipped planted"], res["new planted"]
            print(
                f"  {bucket} paired planted: only new {sum(y and not x for x, y in zip(a_, b_))},"
                f" only shipped {sum(x and not y for x, y in zip(a_, b_))}"
            )


if __name__ == "__main__":
    main()
