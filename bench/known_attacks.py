"""The known-attack library, measured across sources (issue 27: "semantic routing, grown up"). Not a timed test.

A library of attack sentences is compiled from every trainable attack source (not the evaluation-only ones, by
licence), deduplicated, and embedded once. A text's library score is the highest cosine similarity between one
of its sentences and a library entry. Measured so that no source meets itself:

- each attack source's texts are matched against the library **without that source** (a held-out source's
  attacks meet only the other sources' entries);
- benign sources are dealt into two groups of whole sources (as in calibrate_decision.py); the similarity
  threshold is set on one group at the budget and the false-positive rate measured on the other, both ways
  round;
- the library is combined with the classifier (``1 - P(benign)``, the shipped check's attack score) by an OR of
  two thresholds whose split of the budget is chosen on the calibration group; the paired baseline is the
  classifier alone at the same held-out budget (the classifier's own scores are in-sample for the sources it
  was trained on, which favours the baseline).

Two embeddings: ``minilm`` (all-MiniLM-L6-v2 sentence embeddings, onnxruntime int8: a second encoder pass) and
``hidden5`` (the shipped classifier's own fifth-layer mean over the sentence, which the check computes anyway
when it pools over sentence spans inside its windows). Lookup cost is measured in the same run against the
classifier's time on 1 kB and 20 kB documents.

    .venv/bin/python bench/known_attacks.py [--per-source 150] [--queries 60] [--budget 0.02]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
from calibrate_decision import documents, weighted_threshold, wilson
from classifier_data import ATTACKS as ATTACK_LABELS
from classifier_data import EVAL_ONLY, OVER_DEFENCE, cap_per_source, load_all, source_folds
from window_scores import model_dir

from stockade.guardrails.checks.classification.class_scores import window_scores
from stockade.guardrails.checks.classification.library import (
    LIBRARY_FILE,
    KnownAttacks,
    save,
    sentence_vectors,
)
from stockade.guardrails.checks.classification.model import load

CACHE = Path("/tmp/stockade-bench")
REPORT = CACHE / "known_attacks.json"
_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")


def sentences(text: str, limit: int = 12) -> list[str]:
    """The sentences of ``text`` (at least 3 words each; a text without such a sentence is one sentence)."""
    out = [s.strip() for s in _SPLIT.split(text) if len(s.split()) >= 3]
    return (out or [text.strip()])[:limit]


def norm(text: str) -> str:
    return " ".join(re.sub(r"[^\w ]+", " ", text.lower()).split())


def library(per_source: int) -> tuple[list[str], list[str], list[str]]:
    """Deduplicated attack sentences of the trainable attack sources, and each one's source and label."""
    rows = [e for e in load_all() if e.label != "benign" and e.source not in EVAL_ONLY]
    seen: set[str] = set()
    texts, srcs, labels = [], [], []
    for e in cap_per_source(rows, per_source, seed=21):
        for s in sentences(e.text):
            key = norm(s)
            if len(key) < 12 or key in seen:
                continue
            seen.add(key)
            texts.append(s[:400])
            srcs.append(e.source)
            labels.append(e.label)
    return texts, srcs, labels


class Hidden5:
    """The shipped classifier's fifth-layer vectors, pooled per sentence as the check pools them (library.py):
    library entries embedded alone, texts through the rows the check reads."""

    def __init__(self) -> None:
        self.model = load(str(model_dir()))

    def encode(self, texts: list[str]) -> np.ndarray:
        m = self.model
        out = np.zeros((len(texts), 384), np.float32)
        ids = [
            m.tokenizer.encode(t, add_special_tokens=False).ids[: m.window - 2] or [m.sep_id] for t in texts
        ]
        order = np.argsort([len(i) for i in ids], kind="stable")
        for b in range(0, len(order), 64):
            idx = order[b : b + 64]
            _, hidden, x, mask = m._forward([ids[i] for i in idx], hidden=True)
            vecs, rows = sentence_vectors(hidden, x, mask, set())  # one piece per entry
            out[idx[rows]] = vecs
        return out

    def texts(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per text its attack score, and the sentence vectors of the rows the check reads (with owners)."""
        m = self.model
        attack, vecs, owner = [], [], []
        for i, t in enumerate(texts):
            rows, _, _, _, _ = m._rows(t, 4096, None)
            probs, hidden, x, mask = m._forward(rows, hidden=True)
            probs = window_scores(probs, m.labels, m.rule)
            attack.append(float(1.0 - probs[:, m.labels.index("benign")].min()))
            v, _ = sentence_vectors(hidden, x, mask, m.end_ids)
            vecs.append(v)
            owner.extend([i] * len(v))
        return np.array(attack), np.vstack(vecs), np.array(owner)


class MiniLM:
    def __init__(self) -> None:
        from stockade.guardrails.checks.classification.encoders import minilm_path
        from stockade.guardrails.checks.classification.onnx_encoder import OnnxSentenceEncoder

        self.enc = OnnxSentenceEncoder(minilm_path(), max_seq_length=64, threads=1, int8=True)

    def encode(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self.enc.encode_array(texts), dtype=np.float32)


def cached(name: str, encoder: Any, texts: list[str]) -> np.ndarray:
    key = hashlib.sha256(("\x00".join(texts) + name).encode()).hexdigest()[:16]
    path = CACHE / f"library-{name}-{key}.npy"
    if path.exists():
        return np.asarray(np.load(path), dtype=np.float32)
    out = np.asarray(encoder.encode(texts), dtype=np.float32)
    CACHE.mkdir(parents=True, exist_ok=True)
    np.save(path, out)
    return out


def text_scores(
    vecs: np.ndarray, owner: np.ndarray, n: int, lib: np.ndarray, lib_src: np.ndarray, src: list[str]
) -> tuple[np.ndarray, list[int]]:
    """Per text, the best similarity of any of its sentences to a library entry of another source, and the
    index of the entry."""
    best = np.full(n, -1.0)
    which = [-1] * n
    for b in range(0, len(vecs), 512):
        sims = vecs[b : b + 512] @ lib.T
        for r in range(sims.shape[0]):
            t = int(owner[b + r])
            row = np.where(lib_src == src[t], -1.0, sims[r])
            j = int(row.argmax())
            if row[j] > best[t]:
                best[t], which[t] = float(row[j]), j
    return best, which


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--per-source", type=int, default=150, help="attack texts per source in the library")
    parser.add_argument("--queries", type=int, default=60, help="texts per source and label matched")
    parser.add_argument("--budget", type=float, default=0.02)
    parser.add_argument("--embeddings", default="hidden5,minilm")
    parser.add_argument("--write", action="store_true", help="ship the hidden5 library beside the model")
    args = parser.parse_args()
    lib_texts, lib_srcs, lib_labels = library(args.per_source)
    lib_src = np.array(lib_srcs)
    print(f"library: {len(lib_texts)} sentences from {len(set(lib_srcs))} sources", file=sys.stderr)
    rows = load_all()
    attacks = cap_per_source([e for e in rows if e.label != "benign"], args.queries, seed=4)
    benign = cap_per_source([e for e in rows if e.label == "benign"], args.queries, seed=4)
    ordinary_src = sorted({e.source for e in benign if e.source not in OVER_DEFENCE})
    groups = source_folds([e for e in rows if e.label == "benign" and e.source not in OVER_DEFENCE], 2)
    queries = attacks + benign
    q_src = [e.source for e in queries]
    y = np.array([e.label != "benign" for e in queries])
    h5 = Hidden5()
    key = hashlib.sha256("\x00".join(e.text for e in queries).encode()).hexdigest()[:16]
    path = CACHE / f"library-queries-{key}.npz"
    if path.exists():
        with np.load(path) as d:
            cls, h5_vecs, h5_owner = d["cls"], d["vecs"], d["owner"]
    else:
        cls, h5_vecs, h5_owner = h5.texts([e.text for e in queries])
        CACHE.mkdir(parents=True, exist_ok=True)
        np.savez(path, cls=cls, vecs=h5_vecs, owner=h5_owner)
    print(f"queries: {len(queries)} texts scored", file=sys.stderr)
    out: dict[str, Any] = {"library_sentences": len(lib_texts), "groups": groups, "embeddings": {}}
    for name in args.embeddings.split(","):
        encoder: Any = h5 if name == "hidden5" else MiniLM()
        t0 = time.perf_counter()
        lib = cached(f"{name}-v2", encoder, lib_texts)  # v2: pooled as the check pools (no [CLS]/[SEP])
        build_s = time.perf_counter() - t0
        if name == "hidden5":  # the sentences inside the rows the check reads, pooled from its forward pass
            vecs, owner = h5_vecs, h5_owner
        else:  # each sentence of the text embedded alone by a second encoder
            q_sent, q_owner = [], []
            for i, e in enumerate(queries):
                for sent in sentences(e.text):
                    q_sent.append(sent[:400])
                    q_owner.append(i)
            vecs, owner = cached(name, encoder, q_sent), np.array(q_owner)
        lib_score, which = text_scores(vecs, owner, len(queries), lib, lib_src, q_src)
        res = evaluate(lib_score, cls, y, q_src, groups, ordinary_src, args.budget)
        res["build_s"] = round(build_s, 1)
        res["size_mb_int8"] = round(lib.shape[0] * lib.shape[1] / 1e6, 1)
        res["examples"] = [
            {
                "query": queries[i].text[:160],
                "source": q_src[i],
                "matched": lib_texts[which[i]][:160],
                "matched_source": lib_srcs[which[i]],
                "similarity": round(float(lib_score[i]), 3),
            }
            for i in np.argsort(-np.where(y, lib_score, -1.0))[:8]
        ]
        res["cost"] = cost(name, encoder, lib, lib_srcs, lib_labels)
        out["embeddings"][name] = res
        print_result(name, res)
        if name == "hidden5" and args.write:
            write_library(lib, lib_srcs, lib_labels, res["shipped_library_threshold"])
    REPORT.write_text(json.dumps(out, indent=1), encoding="utf-8")


def write_library(lib: np.ndarray, srcs: list[str], labels: list[str], threshold: float) -> None:
    """library.npz beside the model (its calibrated threshold inside)."""
    directory = Path(model_dir())
    save(directory / LIBRARY_FILE, lib, sorted(set(srcs)), list(ATTACK_LABELS), srcs, labels, threshold)
    size = (directory / LIBRARY_FILE).stat().st_size
    print(f"wrote {directory / LIBRARY_FILE} ({size / 1e6:.1f} MB), threshold {threshold:.4f}")


def evaluate(
    lib: np.ndarray,
    cls: np.ndarray,
    y: np.ndarray,
    src: list[str],
    groups: list[list[str]],
    ordinary: list[str],
    budget: float,
) -> dict[str, Any]:
    """Held-out figures of the library alone, the classifier alone and the two combined (OR), per benign
    group: thresholds set on the other group's ordinary benign texts."""
    srcs = np.array(src)
    res: dict[str, Any] = {}
    per_rule: dict[str, dict[str, list[float]]] = {
        k: defaultdict(list) for k in ("library", "classifier", "or")
    }
    fp: dict[str, list[float]] = {k: [] for k in per_rule}
    for g, grp in enumerate(groups):
        cal = (~y) & np.isin(srcs, [s for s in ordinary if s not in grp])
        held = (~y) & np.isin(srcs, grp)
        cal_src = srcs[cal].tolist()
        t_lib = weighted_threshold(lib[cal], cal_src, budget)
        t_cls = weighted_threshold(cls[cal], cal_src, budget)
        tc, tl = fit_or(lib, cls, y, srcs, cal, budget)
        flags = {"library": lib >= t_lib, "classifier": cls >= t_cls, "or": (cls >= tc) | (lib >= tl)}
        for k, f in flags.items():
            fp[k].append(weighted_rate(f, held, srcs))
            for s in sorted(set(srcs[y].tolist())):
                per_rule[k][s].append(float(np.mean(f[y & (srcs == s)])))
        res[f"group{g}"] = {"t_library": t_lib, "t_classifier": t_cls, "or": [tc, tl]}
    for k in per_rule:
        recall = {s: float(np.mean(v)) for s, v in per_rule[k].items()}
        res[k] = {
            "held_out_fpr": float(np.mean(fp[k])),
            "mean_recall_trained": float(np.mean([v for s, v in recall.items() if s not in EVAL_ONLY])),
            "mean_recall_eval_only": float(np.mean([v for s, v in recall.items() if s in EVAL_ONLY])),
            "recall": recall,
        }
    every = (~y) & np.isin(srcs, ordinary)
    res["shipped_or"] = list(fit_or(lib, cls, y, srcs, every, budget))
    res["shipped_library_threshold"] = res["shipped_or"][1]
    return res


def fit_or(
    lib: np.ndarray, cls: np.ndarray, y: np.ndarray, srcs: np.ndarray, cal: np.ndarray, budget: float
) -> tuple[float, float]:
    """Classifier and library thresholds of the OR rule: the split of the budget between the two chosen on
    ``cal`` (benign) by the recall over every attack (whose library scores are out of source, and whose
    classifier scores are the shipped model's)."""
    cal_src = srcs[cal].tolist()
    best = (-1.0, weighted_threshold(cls[cal], cal_src, budget), 1.1)
    for share in (0.25, 0.5, 0.75):
        tc = weighted_threshold(cls[cal], cal_src, budget * (1 - share))
        rest = cal & (cls < tc)
        tl = weighted_threshold(lib[rest], srcs[rest].tolist(), budget * share, -1.0, 1.0)
        if weighted_rate((cls >= tc) | (lib >= tl), cal, srcs) > budget * 1.05:
            continue  # the union's rate on the calibration group stays within budget
        r = float(np.mean(((cls >= tc) | (lib >= tl))[y]))
        if r > best[0]:
            best = (r, tc, tl)
    return best[1], best[2]


def weighted_rate(flags: np.ndarray, sel: np.ndarray, srcs: np.ndarray) -> float:
    """Source-weighted rate of ``flags`` over the texts of ``sel``."""
    rates = [float(np.mean(flags[sel & (srcs == s)])) for s in sorted(set(srcs[sel].tolist()))]
    return float(np.mean(rates)) if rates else float("nan")


def cost(name: str, encoder: Any, lib: np.ndarray, srcs: list[str], labels: list[str]) -> dict[str, Any]:
    """Median CPU time per text (process time, which a busy machine disturbs less than wall time) of the
    lookup beside the classifier's own score() on the same texts, measured in the same run. hidden5: the
    check's own extra work (pooling the sentences of the rows read from the fifth-layer states the forward pass
    already returns, and the search). minilm: its encoder over the sentences of the text's first 4 kB (about
    what 16 windows read), and the search."""
    model = load(str(model_dir()))
    names = sorted(set(srcs))
    library = KnownAttacks(lib, [names.index(s) for s in srcs], [0] * len(srcs), names, ["injection"], 1.0)
    rng = random.Random(5)
    pool = [e.text for e in load_all() if e.label == "benign"]
    out: dict[str, Any] = {}
    for size in (1_000, 20_000):
        texts = documents(pool, size, 20, rng)
        t_cls, t_lib = [], []
        for text in texts:
            t0 = time.process_time()
            model.score(text, max_windows=4096)
            t_cls.append(time.process_time() - t0)
            if name == "hidden5":
                rows, _, _, _, _ = model._rows(text, 4096, None)
                _, hidden, x, mask = model._forward(rows, hidden=True)
                t0 = time.process_time()
                for _ in range(10):
                    vecs, owner = sentence_vectors(hidden, x, mask, model.end_ids)
                    library.match(vecs, owner)
                t_lib.append((time.process_time() - t0) / 10)
            else:
                t0 = time.process_time()
                v = encoder.encode(sentences(text[:4000], limit=64))
                (v @ lib.T).max(axis=1)
                t_lib.append(time.process_time() - t0)
        c, k = statistics.median(t_cls) * 1000, statistics.median(t_lib) * 1000
        out[f"{size // 1000}kB"] = {
            "classifier_cpu_ms": round(c, 1),
            "lookup_cpu_ms": round(k, 2),
            "ratio": round(k / c, 3),
        }
    _ = labels
    return out


def print_result(name: str, res: dict[str, Any]) -> None:
    print(f"\n== {name}: library {res['size_mb_int8']} MB (int8), built in {res['build_s']} s ==")
    for k in ("library", "classifier", "or"):
        r = res[k]
        print(
            f"  {k:10s} held-out benign flagged {r['held_out_fpr']:.3f}; mean recall per source: trained "
            f"{r['mean_recall_trained']:.3f}, evaluation-only {r['mean_recall_eval_only']:.3f}"
        )
    for s in sorted(res["library"]["recall"]):
        line = "  ".join(f"{k} {res[k]['recall'][s]:.2f}" for k in ("library", "classifier", "or"))
        print(f"    {s:42s} {line}{' (eval only)' if s in EVAL_ONLY else ''}")
    print(f"  cost: {res['cost']}")
    print(f"  shipped OR thresholds (classifier, library): {res['shipped_or']}")
    for ex in res["examples"]:
        print(f"    {ex['similarity']:.3f} {ex['source']} ~ {ex['matched_source']}: {ex['query'][:70]!r}")
    _ = wilson


if __name__ == "__main__":
    main()
