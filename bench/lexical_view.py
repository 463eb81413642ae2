"""Does a lexical view stacked on the encoder help? Measured on the cross-source groups (not a timed test).

The encoder reads English WordPieces and averages a 64-token window; a linear model over hashed character
n-grams and word pairs reads any script and keeps a short phrase's weight whatever surrounds it. This script
trains that linear model per cross-source fold on exactly the texts ``bench/train_classifier.py`` trains on
(same sources, caps, seeds and folds), scores the held-out sources with it, and compares, paired on the same
texts, the encoder alone (its out-of-fold attack scores from the report the training run wrote) against the
two stacked: ``logit(encoder) + w * logit(lexical)``, ``w`` chosen on the other folds' out-of-fold scores.

    .venv/bin/python bench/train_classifier.py ... --folds 3 --no-ship    # the encoder's out-of-fold report
    .venv/bin/python bench/lexical_view.py --report /tmp/stockade-bench/classifier_eval.json

Run it with the same data options as the training run (the defaults are the shipped recipe's).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

import train_classifier as tc
from classifier_data import EVAL_ONLY, embed_attacks, load_all, source_folds

from stockade.guardrails.checks.classification.lexical import (
    LexicalModel,
    chunks,
    fit_lexical,
)

# the shipped recipe's data options (bench/train_classifier.py's) and the view's regularisation
DEFAULTS: dict[str, Any] = {
    "embedded": 1000,
    "augment": 1500,
    "cap": 150,
    "synth_cap": 600,
    "score_cap": 120,
    "synth_weight": 4.0,
    "folds": 3,
    "seed": 13,
    "C": 1.0,
}


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, 1e-6, 1 - 1e-6)
    return np.log(p / (1 - p))


def training_chunks(text: str, rng: random.Random) -> list[str]:
    parts = chunks(text)
    if len(parts) <= 2:
        return parts
    return [parts[0], rng.choice(parts[1:])]


def train(examples: list[Any], train_idx: list[int], args: Any, tag: str) -> LexicalModel:
    """The lexical model on the chunks of ``train_idx``, each (source, label) the same total weight and the
    synthetic sources ``--synth-weight`` times that, as the encoder's head is trained."""
    rng = random.Random(args.seed)
    texts, labels, groups = [], [], []
    for i in train_idx:
        e = examples[i]
        for c in training_chunks(e.text, rng):
            texts.append(c)
            labels.append(int(e.label != "benign"))
            groups.append(tc._weight_group(e.source) + "|" + e.label)
    count: dict[str, int] = defaultdict(int)
    for g in groups:
        count[g] += 1
    weights = np.array([(args.synth_weight if g.startswith("synth_") else 1.0) / count[g] for g in groups])
    log(f"{tag}: lexical model on {len(texts)} chunks of {len(train_idx)} texts")
    return fit_lexical(texts, np.array(labels), weights, c=args.C)


def score(model: LexicalModel, text: str) -> float:
    return max(model.attack_scores(chunks(text)))


def training_set(args: Any) -> tuple[list[Any], list[int], dict[int, tuple[str, str]], list[int], list[int]]:
    """The texts bench/train_classifier.py trains on, with the same options and seeds: every example, the capped
    training indices, the planted and obfuscated copies (index -> the sources they are made of), the indices
    scored in the cross-source folds, and the pool the folds are dealt from."""
    examples = load_all(extra=True)
    embedded = embed_attacks(examples, args.embedded, args.seed) if args.embedded else []
    examples += [e for e, _, _ in embedded]
    augmented = tc.augmented_copies(examples, args.augment, args.seed) if args.augment else []
    examples += [e for e, _ in augmented]
    pool = [
        i
        for i, e in enumerate(examples)
        if e.source not in EVAL_ONLY and not e.source.startswith(("embedded:", "aug:"))
    ]
    synth = [i for i in pool if examples[i].source.startswith("synth_")]
    capped = tc._cap_idx(examples, [i for i in pool if i not in set(synth)], args.cap, args.seed)
    capped = sorted(capped + tc._cap_idx(examples, synth, args.synth_cap, args.seed))
    first = len(examples) - len(embedded) - len(augmented)
    parts = {first + j: (a, h) for j, (_, a, h) in enumerate(embedded)}
    first += len(embedded)
    parts.update({first + j: (src, src) for j, (_, src) in enumerate(augmented)})
    scored = tc._cap_idx(examples, pool, args.score_cap, args.seed + 1)
    return examples, capped, parts, scored, pool


def model_without(benign_sources: frozenset[str], args: Any | None = None) -> LexicalModel:
    """The shipped lexical view's training, without the texts of ``benign_sources`` (nor copies made of them):
    bench/calibrate_decision.py scores each group of benign sources with the view that never saw it, as the
    shipped view meets a user's text."""
    args = args or argparse.Namespace(**DEFAULTS)
    examples, capped, parts, _, _ = training_set(args)
    warden_test = {e.text for e in tc._warden_test()}
    keep = [
        i
        for i in capped
        if examples[i].text not in warden_test
        and not (examples[i].label == "benign" and examples[i].source in benign_sources)
    ]
    keep += [i for i, (a, h) in parts.items() if not {a, h} & benign_sources]
    return train(examples, keep, args, f"lexical view without {len(benign_sources)} benign sources")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--report", type=Path, default=tc.OUT / "classifier_eval.json")
    parser.add_argument("--embedded", type=int, default=DEFAULTS["embedded"])
    parser.add_argument("--augment", type=int, default=DEFAULTS["augment"])
    parser.add_argument("--cap", type=int, default=DEFAULTS["cap"])
    parser.add_argument("--synth-cap", type=int, default=DEFAULTS["synth_cap"])
    parser.add_argument("--score-cap", type=int, default=DEFAULTS["score_cap"])
    parser.add_argument("--synth-weight", type=float, default=DEFAULTS["synth_weight"])
    parser.add_argument("--folds", type=int, default=DEFAULTS["folds"])
    parser.add_argument("--seed", type=int, default=DEFAULTS["seed"])
    parser.add_argument(
        "--C", type=float, default=DEFAULTS["C"], help="inverse L2 strength of the lexical model"
    )
    parser.add_argument("--fpr", type=float, default=0.02)
    parser.add_argument("--out", type=Path, default=tc.OUT / "lexical_eval.json")
    parser.add_argument(
        "--ship",
        type=float,
        default=None,
        metavar="W",
        help="instead: train on every training text and write lexical.npz, stacked at weight W, to --ship-dir",
    )
    parser.add_argument("--ship-dir", type=Path, default=tc.SHIP)
    parser.add_argument(
        "--no-train",
        default=None,
        help="comma-separated sources never trained on (default: the report's own --no-train)",
    )
    parser.add_argument(
        "--paired-with",
        type=Path,
        default=None,
        metavar="LEXICAL_EVAL",
        help="also compare the stacked scores, paired, with another run's --out (same folds and texts)",
    )
    parser.add_argument(
        "--max-windows",
        type=int,
        default=1,
        help="the check stacks the view on texts of at most this many windows",
    )
    args = parser.parse_args()

    examples, capped, parts, scored, pool = training_set(args)
    if args.ship is not None:
        warden_test = {e.text for e in tc._warden_test()}
        train_idx = [i for i in capped if examples[i].text not in warden_test] + list(parts)
        model = train(examples, train_idx, args, "shipped lexical view")
        model.save(args.ship_dir / "lexical.npz")
        meta_path = args.ship_dir / "classifier.json"
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        meta["lexical"] = {
            "weight": args.ship,
            "max_windows": args.max_windows,
            "trained_by": "bench/lexical_view.py",
            "args": {k: str(v) for k, v in vars(args).items() if k not in ("report", "out", "ship_dir")},
        }
        meta_path.write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
        log(f"wrote {args.ship_dir / 'lexical.npz'} and the weight {args.ship} in classifier.json")
        return

    report = json.loads(args.report.read_text(encoding="utf-8"))
    if args.no_train is None:  # a paired ablation: the view leaves out what the encoder left out
        args.no_train = report.get("args", {}).get("no_train", "")
    no_train = {s_ for s_ in args.no_train.split(",") if s_}
    enc = {int(i): None for i in report["oof_scores"]}
    rows = report["oof_attack_rows"]
    for i, r in zip(enc, rows, strict=True):  # the report's order is the out-of-fold dict's
        assert examples[i].source == r[0] and examples[i].label == r[1], (i, examples[i].source, r[0])
        enc[i] = float(r[2])

    lex: dict[int, float] = {}
    fold_of: dict[int, int] = {}
    for f, held in enumerate(source_folds([examples[i] for i in pool], args.folds)):
        held_set = set(held)
        train_idx = [i for i in capped if examples[i].source not in held_set | no_train]
        train_idx += [i for i, (a, h) in parts.items() if not {a, h} & (held_set | no_train)]
        model = train(examples, train_idx, args, f"fold {f + 1}")
        for i in scored:
            if examples[i].source in held_set:
                lex[i] = score(model, examples[i].text)
                fold_of[i] = f
    keys = [i for i in enc if i in lex]
    assert len(keys) == len(enc), (len(keys), len(enc))
    e_logit = logit(np.array([enc[i] for i in keys]))
    l_logit = logit(np.array([lex[i] for i in keys]))
    src = [examples[i].source for i in keys]
    lab = [examples[i].label for i in keys]
    folds = np.array([fold_of[i] for i in keys])

    # logits: the paired comparison ranks them, at full precision
    def rows_of(v: np.ndarray) -> list[list[Any]]:
        return [[s, lb, float(x)] for s, lb, x in zip(src, lab, v, strict=True)]

    grid = [0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0]
    stacked = np.zeros(len(keys))
    chosen = {}
    for f in range(args.folds):
        other = folds != f
        best = max(
            grid,
            key=lambda w: tc.paired(
                [r for r, o in zip(rows_of(e_logit + w * l_logit), other, strict=True) if o],
                [r for r, o in zip(rows_of(e_logit), other, strict=True) if o],
                args.fpr,
                f"choose w for fold {f + 1}: {w}",
            )["recipe"]["balanced_accuracy"],
        )
        chosen[f] = best
        stacked[folds == f] = (e_logit + best * l_logit)[folds == f]
    log(f"weights chosen on the other folds: {chosen}")
    every = {
        w: tc.paired(rows_of(e_logit + w * l_logit), rows_of(e_logit), args.fpr, f"all folds, w {w}")[
            "recipe"
        ]["balanced_accuracy"]
        for w in grid
    }
    log(f"balanced accuracy per weight on every fold's out-of-fold scores (for --ship): {every}")
    # as the check applies it: only to texts of at most --max-windows windows (longer ones: the encoder alone)
    from stockade.guardrails.checks.classification.model import default_model_dir, load

    model = load(str(default_model_dir()))
    n_windows = np.array(
        [
            max(1, -(-len(model.tokenizer.encode(examples[i].text, add_special_tokens=False).ids) // 62))
            for i in keys
        ]
    )
    short = n_windows <= args.max_windows
    gated = np.where(short, stacked, e_logit)
    log(f"texts of at most {args.max_windows} window(s): {short.mean():.0%} of those scored")
    every_short = {
        w: tc.paired(
            rows_of(np.where(short, e_logit + w * l_logit, e_logit)),
            rows_of(e_logit),
            args.fpr,
            f"gated, w {w}",
        )["recipe"]["balanced_accuracy"]
        for w in grid
    }
    log(f"as the check stacks it (<= {args.max_windows} windows), per weight, every fold: {every_short}")
    out = {
        "stacked_short_only": tc.paired(
            rows_of(gated),
            rows_of(e_logit),
            args.fpr,
            f"stacked on texts of <= {args.max_windows} windows",
        ),
        "lexical_alone": tc.paired(rows_of(l_logit), rows_of(e_logit), args.fpr, "lexical vs encoder"),
        "stacked": tc.paired(rows_of(stacked), rows_of(e_logit), args.fpr, "stacked vs encoder"),
        "weights": chosen,
        "every_fold": every,
        "every_fold_short_only": every_short,
        "no_train": sorted(no_train),
        "stacked_short_only_rows": rows_of(gated),
    }
    if args.paired_with:
        other = json.loads(args.paired_with.read_text(encoding="utf-8"))
        out["paired_with"] = {
            "other": str(args.paired_with),
            "other_no_train": other.get("no_train"),
            "result": tc.paired(
                rows_of(gated), other["stacked_short_only_rows"], args.fpr, "stacked, this run vs the other"
            ),
        }
    args.out.write_text(json.dumps(out), encoding="utf-8")
    log(f"written {args.out}")


if __name__ == "__main__":
    main()
