"""Calibrate and measure the shipped classifier's document-level decision (decision.py). Not a timed test.

Every figure comes from the real scoring path (``AttackClassifier.score``: windows, screener, decoded views,
decision head), then the decision's thresholds are set and measured:

- Benign sources are dealt into two groups of whole sources (A and B). Thresholds are set on one group and
  measured on the other, both ways round, so every benign figure is on sources the thresholds never saw; the
  shipped thresholds are then set on both groups together.
- Texts of five lengths: each source's own texts (1 window or a few), and documents of about 1, 5, 20 and 100 kB
  built by joining texts of one source (a report of PEP paragraphs, a log file, a meeting transcript...).
  Documents joined from prompt collections (``PROMPT_SOURCES``: prompt libraries, not documents) set no
  threshold and host no planted attack; how often the shipped rules flag them is reported on its own.
- Per window-count bin and preset, the threshold is the lowest whose weighted false-positive rate on the
  calibration group's texts of that bin is within the preset's budget. Every stratum (one source's texts of one
  length) carries the same weight whatever its sample size, and every stratum is drawn by its own seeded
  generator: a larger sample of one stratum sharpens the estimate without moving the others (the draw of 40
  short texts per source alone moved the one-window threshold by 0.02; ``bench/threshold_noise.py``).
  Thresholds only grow with length (a longer text never gets a lower one).
- Attacks: every attack source's texts alone, and the same texts planted at a random place in the held-out
  group's documents. Sources the model was trained on are reported apart from the evaluation-only ones
  (never trained on).

    .venv/bin/python bench/calibrate_decision.py [--write] [--rescore] [--docs 20] [--per-source 60]
        [--short 300] [--small-docs 80]

Scores are cached per source under /tmp/stockade-bench/decision_parts (keyed by the model files and the sample
sizes), so a new model is scored afresh and an interrupted run resumes. On a machine with spare cores, score
in parallel first (``--part 0/3``, ``--part 1/3``, ``--part 2/3`` at once, same other arguments; a part always
scores), then run without ``--part`` but with ``--rescore`` (without it the last assembled scores are read) to
assemble, report and (``--write``) store the rules.

``--write`` stores the thresholds in the model directory's classifier.json (``decision``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pickle
import random
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from classifier_data import EVAL_ONLY, OVER_DEFENCE, Example, cap_per_source, load_all, source_folds
from window_scores import model_dir

from stockade.guardrails.checks.classification.decision import spike_score
from stockade.guardrails.checks.classification.model import AttackClassifier, load

BUCKETS = {"text": 0, "1kB": 1_000, "5kB": 5_000, "20kB": 20_000, "100kB": 100_000}
PRESETS = {"strict": 0.05, "balanced": 0.02, "permissive": 0.005}
DEFAULT = "balanced"
# Prompt collections (system prompts, "act as" and persona prompts) are ordinary as single texts, but a 20 kB
# document made of them is not a document: it is a prompt library, dozens of "You are X, from now on..." set-ups
# in a row. The thresholds for documents are set on the other sources only (reports, web pages, code, logs,
# transcripts, e-mails and queries); documents built of prompt collections are still scored, and how often the
# shipped rules flag them is reported on its own line ("prompt libraries"), so the cost is visible.
# llm-warden's benign half is such a collection: 618 of its 1,323 benign rows open with a persona set-up ("You
# are", "Pretend", "Act as", "Roleplay"...), most of the rest are instruction-tuning tasks (fifteenth round).
PROMPT_SOURCES = frozenset({"bigpromptlib_system_prompts", "awesome_chatgpt_prompts", "llm-warden"})
BINS = (1, 8, 40, 160, 4096)  # thresholds are set per window count: up to 1, 8, 40, 160 windows, and beyond
REPORT = Path("/tmp/stockade-bench/decision_eval.json")
SCORES = Path("/tmp/stockade-bench/decision_scores.pickle")
PARTS = Path("/tmp/stockade-bench/decision_parts")  # scores per source, so an interrupted run resumes


def bin_of(windows: int) -> int:
    return next((b for b in BINS if windows <= b), BINS[-1])


@dataclass
class Scored:
    source: str
    bucket: str
    windows: int
    attack: float  # the best attack score over the windows (and decoded views)
    label: str
    wins: tuple[float, ...] = ()  # each window's attack score, windows read, in text order
    extra: float = 0.0  # the best over decoded views and a short text's sentences
    text: str = ""  # planted attacks: the attack text (the known-attack library is measured on it)
    sentence: float = 0.0  # a text of a few windows: its most suspicious window's best sentence read alone


def score(model: AttackClassifier, text: str, source: str, bucket: str, label: str) -> Scored:
    s = model.score(text, max_windows=4096)
    attack = max(v for k, v in s.probs.items() if k != "benign")
    return Scored(
        source, bucket, s.windows, attack, label, s.window_attack, s.extra_attack, sentence=s.sentence_attack
    )


def documents(texts: list[str], size: int, n: int, rng: random.Random) -> list[str]:
    """``n`` documents of about ``size`` characters, each joining randomly drawn texts of one source."""
    if not texts:
        return []
    out = []
    for _ in range(n):
        parts: list[str] = []
        total = 0
        while total < size:
            t = rng.choice(texts)
            parts.append(t)
            total += len(t) + 2
        out.append("\n\n".join(parts)[: max(size, len(parts[0]))])
    return out


def plant(doc: str, attack: str, rng: random.Random) -> str:
    """``attack`` inserted between two paragraphs (or lines) of ``doc`` at a random place."""
    cuts = [i for i, c in enumerate(doc) if c == "\n"] or [len(doc)]
    at = rng.choice([0, *cuts, len(doc)])
    return f"{doc[:at]}\n\n{attack}\n\n{doc[at:]}"


def weights(sel: list[Scored], population: list[Scored]) -> np.ndarray:
    """Each row of ``sel`` weighted by its stratum (source and length) in ``population``: every stratum carries
    the same total weight whatever its sample size, so a threshold estimates the same quantity however many
    texts of each kind were drawn (more short texts of a source do not outweigh its 1 kB documents, and the few
    short texts that run to several windows keep their small share)."""
    count: dict[tuple[str, str], int] = defaultdict(int)
    for r in population:
        count[(r.source, r.bucket)] += 1
    return np.array([1.0 / count[(r.source, r.bucket)] for r in sel])


def weighted_threshold(
    values: np.ndarray, w: np.ndarray, budget: float, lo: float = 0.0, hi: float = 1.0
) -> float:
    """The lowest threshold whose false-positive rate, rows weighted by ``w`` (see ``weights``), is within
    ``budget`` (scores in ``[lo, hi]``)."""
    w = w / w.sum()
    order = np.argsort(-values)
    cut = int(np.searchsorted(np.cumsum(w[order]), budget, side="right"))
    return float(min(hi, values[order[cut]] + 1e-6)) if cut < len(values) else lo


def thresholds(rows: list[Scored], budget: float) -> dict[int, float]:
    """Per window-count bin, the threshold, non-decreasing with length."""
    out = {}
    prev = 0.0
    for b in BINS:
        sel = [r for r in rows if bin_of(r.windows) == b]
        if sel:
            t = weighted_threshold(np.array([r.attack for r in sel]), weights(sel, rows), budget)
            prev = max(prev, t)
        out[b] = prev
    return out


def fired(r: Scored, t: dict[int, float]) -> bool:
    return r.attack >= t[bin_of(r.windows)]


# The spike rule (decision.py): a document is also flagged when its top window stands out from the document's own
# baseline. Its weight and its share of the budget are chosen on the calibration group's planted attacks and on
# attacks of more than one window read alone (fit_rule); what is left of the budget after the top-window rule
# sets the spike threshold per window-count bin.
WEIGHTS = (0.25, 0.5, 0.75, 1.0)
SHARES = (0.25, 0.5, 0.75)


@dataclass
class Rule:
    top: dict[int, float]  # the top-window thresholds per bin
    weight: float = 0.0
    share: float = 0.0
    spike: dict[int, float] | None = None  # spike thresholds (logit units) per bin
    sentence: dict[int, float] | None = None  # sentence thresholds per bin (with_sentences)


def spike_of(r: Scored, weight: float) -> float:
    s = spike_score(r.wins, weight)
    return float("-inf") if s is None else s


def flagged(r: Scored, rule: Rule) -> bool:
    b = bin_of(r.windows)
    if r.attack >= rule.top[b]:
        return True
    if rule.sentence and r.sentence > 0 and r.sentence >= rule.sentence.get(b, float("inf")):
        return True
    return rule.spike is not None and spike_of(r, rule.weight) >= rule.spike.get(b, float("inf"))


# The spike rule applies to texts of up to this many windows (``--spike-max-windows``); beyond, the top window
# alone keeps the whole budget.
SPIKE_MAX_WINDOWS = BINS[-1]


def spike_rule(benign: list[Scored], budget: float, weight: float, share: float) -> Rule:
    """Top-window thresholds at ``(1 - share) * budget``, then per bin the spike threshold that brings the
    union to ``budget`` on ``benign`` (in the bins up to ``SPIKE_MAX_WINDOWS``; beyond, the top-window
    threshold at the whole budget, never below a shorter text's)."""
    top = thresholds(benign, budget * (1 - share))
    whole = thresholds(benign, budget)
    top[BINS[0]] = whole[BINS[0]]  # a one-window text has no spike: the whole budget
    for b, prev in zip(BINS[1:], BINS):
        if b > SPIKE_MAX_WINDOWS:
            top[b] = max(top[prev], whole[b])
    spike = {}
    for b in BINS[1:]:
        sel = [r for r in benign if bin_of(r.windows) == b]
        if not sel or b > SPIKE_MAX_WINDOWS:
            continue
        values = np.array([np.inf if r.attack >= top[b] else spike_of(r, weight) for r in sel])
        spike[b] = weighted_threshold(values, weights(sel, benign), budget, -np.inf, np.inf)
    return Rule(top, weight, share, spike)


def fit_rule(
    benign: list[Scored], planted: list[Scored], budget: float, alone: list[Scored] | None = None
) -> Rule:
    """The spike rule whose weight and share catch the most attacks (the top-window rule alone when no spike rule
    does better): the mean of the recall on ``planted`` and, when given, on the attack texts of ``alone`` that
    run to more than one window (long jailbreak prompts; a one-window text meets the same threshold whatever
    the rule). Fifteenth round: chosen on planted attacks alone, the rule gave the spike three quarters of the
    budget, and the top-window threshold of 2-8 window texts rose from 0.978 to 0.998, which cost attacks read
    alone 9 points of recall."""
    long_alone = [r for r in alone or () if r.windows > 1]

    def caught(rule: Rule) -> float:
        parts = [float(np.mean([flagged(r, rule) for r in rows])) for rows in (planted, long_alone) if rows]
        return float(np.mean(parts)) if parts else 0.0

    best = Rule(thresholds(benign, budget))
    best_caught = caught(best)
    for weight in WEIGHTS:
        for share in SHARES:
            rule = spike_rule(benign, budget, weight, share)
            c = caught(rule)
            if c > best_caught + 1e-9:
                best, best_caught = rule, c
    return best


# The sentence rule (decision.py): in the bins where texts have their most suspicious window's sentences read
# alone, the window rules keep 3/4 of the budget and the sentence threshold takes what is left. Measured
# 2026-11-29 (tenth round): folding the sentences into the window score instead raised the window threshold
# and cost attacks of 2-8 windows (long jailbreak prompts) 15 points of recall; a quarter kept them.
SENTENCE_SHARE = 0.25


def with_sentences(rule: Rule, benign: list[Scored], budget: float) -> Rule:
    """``rule`` with the sentence rule added in the bins where sentences are read, on ``benign`` at ``budget``:
    there the window rules are refitted to ``(1 - SENTENCE_SHARE) * budget`` (a spike rule keeps its top-window
    thresholds and gives up the spike's part; a top-window rule alone rises, kept non-decreasing with length)
    and the sentence threshold brings the union back to ``budget``."""
    bins = {bin_of(r.windows) for r in benign if r.sentence > 0}
    if not bins:
        return rule
    reduced = budget * (1 - SENTENCE_SHARE)
    top, spike = dict(rule.top), dict(rule.spike or {})
    for b in bins:
        sel = [r for r in benign if bin_of(r.windows) == b]
        if rule.spike is not None:
            values = np.array([np.inf if r.attack >= top[b] else spike_of(r, rule.weight) for r in sel])
            spike[b] = weighted_threshold(values, weights(sel, benign), reduced, -np.inf, np.inf)
        else:
            own = weighted_threshold(np.array([r.attack for r in sel]), weights(sel, benign), reduced)
            top[b] = max(top[b], own)
    prev = 0.0
    for b in BINS:
        prev = top[b] = max(prev, top[b])
    base = Rule(top, rule.weight, rule.share, spike if rule.spike is not None else None)
    sentence = {}
    for b in sorted(bins):
        sel = [r for r in benign if bin_of(r.windows) == b]
        values = np.array([np.inf if flagged(r, base) else (r.sentence or -np.inf) for r in sel])
        t = weighted_threshold(values, weights(sel, benign), budget, 0.5, np.inf)
        sentence[b] = max(0.5, t)  # never below an even chance
    return Rule(base.top, base.weight, base.share, base.spike, sentence)


def wilson(k: float, n: int) -> str:
    if n == 0:
        return "n/a"
    z, p = 1.96, k
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return f"{max(0.0, centre - half):.3f}-{min(1.0, centre + half):.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--docs", type=int, default=20, help="documents per source and length")
    parser.add_argument("--per-source", type=int, default=60, help="attacks per source")
    parser.add_argument(
        "--short", type=int, default=0, help="short benign texts per source (default: --per-source)"
    )
    parser.add_argument("--planted", type=int, default=20, help="attacks per source planted in documents")
    parser.add_argument(
        "--long-docs",
        type=int,
        default=0,
        help="documents per source of 100 kB (default: a third of --docs, at least 3)",
    )
    parser.add_argument(
        "--small-docs",
        type=int,
        default=0,
        help="documents per source of 1 kB (default: --docs); cheap, and they set the sentence rule's threshold",
    )
    parser.add_argument("--write", action="store_true", help="store the rules in the model's classifier.json")
    parser.add_argument(
        "--spike",
        action="store_true",
        help="with --write, store the spike rule too (measured, not shipped: it did not beat the top-window "
        "rule on held-out sources at the same false-positive rate)",
    )
    parser.add_argument(
        "--spike-presets",
        default="",
        help="with --spike, only these presets (comma-separated) get the spike rule; the others keep the "
        "top-window rule alone (measured held out: the rule that stays within its budget)",
    )
    parser.add_argument(
        "--spike-max-windows",
        type=int,
        default=BINS[-1],
        choices=BINS[1:],
        help="the spike rule applies to texts of up to this many windows (a bin's upper bound); beyond, the top "
        "window alone keeps the whole budget",
    )
    parser.add_argument("--skip-sources", default="", help="comma-separated sources to leave out")
    parser.add_argument(
        "--part", default="", help="k/n: score only every n-th source from the k-th (run n parts at once)"
    )
    parser.add_argument(
        "--lexical-in-sample",
        action="store_true",
        help="score every text with the shipped lexical view (by default each benign group meets a view trained "
        "without it)",
    )
    parser.add_argument("--rescore", action="store_true", help="ignore the scores cached by an earlier run")
    parser.add_argument(
        "--rescore-short", action="store_true", help="score the short texts again, keep the cached documents"
    )
    args = parser.parse_args()
    global SPIKE_MAX_WINDOWS
    SPIKE_MAX_WINDOWS = args.spike_max_windows
    spike_presets = frozenset(p for p in args.spike_presets.split(",") if p)
    if unknown := spike_presets - set(PRESETS):
        parser.error(f"--spike-presets: unknown preset(s) {sorted(unknown)}; one of {sorted(PRESETS)}")
    if SCORES.exists() and not args.rescore and not args.part:  # a part always scores (or resumes its own)
        scored, attack_rows, planted, groups = pickle.loads(SCORES.read_bytes())
        if args.rescore_short:
            scored = [r for r in scored if r.bucket != "text"] + short_benign(args.short or args.per_source)
            attack_rows = short_attacks(args.per_source)
            SCORES.write_bytes(pickle.dumps((scored, attack_rows, planted, groups)))
        assemble(scored, attack_rows, planted, groups, args, spike_presets)
        return
    tasks, groups = build(args)
    parts = PARTS / cache_key(args)
    parts.mkdir(parents=True, exist_ok=True)
    mine = list(tasks.items())
    if args.part:
        k, n = (int(x) for x in args.part.split("/"))
        mine = [t for i, t in enumerate(mine) if i % n == k]
    model = load(str(model_dir()))
    shipped_view, held_out_views = model.lexical, {}
    if shipped_view is not None and not args.lexical_in_sample:
        # the lexical view memorises the benign texts it was trained on: each benign group is scored by a view
        # trained without that group's sources (as the shipped view meets a user's text); attacks alone by the
        # shipped one (their sources were trained on, as the encoder's were)
        from lexical_view import model_without

        for g in groups:
            view = model_without(frozenset(g))
            held_out_views.update(dict.fromkeys(g, view))
    for name, items in mine:
        path = parts / f"{name}.pickle"
        if path.exists():
            continue
        done = []
        for text, src, bucket, label, host, attack_text in items:
            if shipped_view is not None:
                model.lexical = held_out_views.get(host or src, shipped_view)
            r = score(model, text, src, bucket, label)
            r.text = attack_text
            done.append((r, host))
        path.write_bytes(pickle.dumps(done))
        print(f"{name}: done", file=sys.stderr)
    if args.part:
        return
    scored = [
        r
        for name in tasks
        if name.startswith("benign")
        for r, _ in pickle.loads((parts / f"{name}.pickle").read_bytes())
    ]
    attack_rows, planted = [], []
    for name in tasks:
        if name.startswith("attacks"):
            for r, host in pickle.loads((parts / f"{name}.pickle").read_bytes()):
                if host is None:
                    attack_rows.append(r)
                else:
                    planted.append((r, host))
    SCORES.write_bytes(pickle.dumps((scored, attack_rows, planted, groups)))
    assemble(scored, attack_rows, planted, groups, args, spike_presets)


def assemble(
    scored: list[Scored],
    attack_rows: list[Scored],
    planted: list[tuple[Scored, str]],
    groups: list[list[str]],
    args: argparse.Namespace,
    spike_presets: frozenset[str],
) -> None:
    """Report (and with ``--write`` store) the rules: documents of prompt collections are set apart (measured,
    not calibrated on), as are attacks planted in them (none in a fresh draw: they are never hosts)."""
    libraries = [r for r in scored if r.bucket != "text" and r.source in PROMPT_SOURCES]
    scored = [r for r in scored if r.bucket == "text" or r.source not in PROMPT_SOURCES]
    planted = [(p, host) for p, host in planted if host not in PROMPT_SOURCES]
    report(
        scored,
        attack_rows,
        planted,
        groups,
        write=args.write,
        spike=args.spike,
        only=spike_presets,
        libraries=libraries,
    )


# One task per source: (text, source, bucket, label, host source of a planted attack, the attack text).
Task = tuple[str, str, str, str, "str | None", str]


def build(args: argparse.Namespace) -> tuple[dict[str, list[Task]], list[list[str]]]:
    """Every text to score, per source, drawn with fixed seeds (so parallel parts agree). Each draw has its own
    generator, seeded by what it draws (short texts of a source, its documents of one length, one attack
    source's plantings): changing one sample size leaves every other draw as it was."""
    skip = set(filter(None, args.skip_sources.split(",")))
    rows = [e for e in load_all() if e.source not in skip]
    benign = [e for e in rows if e.label == "benign" and e.source not in OVER_DEFENCE]
    groups = source_folds(benign, 2)
    by_source: dict[str, list[Example]] = defaultdict(list)
    for e in cap_per_source(benign, 1500, seed=3):
        by_source[e.source].append(e)
    tasks: dict[str, list[Task]] = {}
    docs_of: dict[tuple[str, str], list[str]] = {}
    for src, exs in sorted(by_source.items()):
        texts = [e.text for e in exs]
        items: list[Task] = []
        short = random.Random(f"short {src}").sample(texts, min(args.short or args.per_source, len(texts)))
        items.extend((t, src, "text", "benign", None, "") for t in short)
        for bucket, size in list(BUCKETS.items())[1:]:
            n = args.docs if size <= 20_000 else (args.long_docs or max(3, args.docs // 3))
            n = (args.small_docs or n) if bucket == "1kB" else n
            docs = documents(texts, size, n, random.Random(f"documents {src} {bucket}"))
            items.extend((d, src, bucket, "benign", None, "") for d in docs)
            if src not in PROMPT_SOURCES:  # a prompt library is scored and reported, never a host
                docs_of[(src, bucket)] = docs
        tasks[f"benign-{src}"] = items
    attacks = cap_per_source([e for e in rows if e.label != "benign"], args.per_source, seed=3)
    for src in sorted({e.source for e in attacks}):
        items = []
        n_planted = 0
        rng = random.Random(f"planted {src}")
        for e in (e for e in attacks if e.source == src):
            items.append((e.text, src, "text", e.label, None, ""))
            if len(e.text) <= 1500 and n_planted < args.planted:
                n_planted += 1
                bucket = rng.choice(list(BUCKETS)[1:])
                host_src, host = rng.choice(
                    [(k[0], d) for k, v in docs_of.items() if k[1] == bucket for d in v]
                )
                items.append((plant(host, e.text, rng), src, bucket, e.label, host_src, e.text))
        tasks[f"attacks-{src}"] = items
    return tasks, groups


def cache_key(args: argparse.Namespace) -> str:
    """The scores' cache folder: the model's files and the sample sizes."""
    model_file = Path(model_dir()) / "model.onnx"
    head = Path(model_dir()) / "head.npz"
    parts = [str(model_file.stat().st_size), str(model_file.stat().st_mtime_ns)]
    parts += [str(head.stat().st_mtime_ns) if head.exists() else "-"]
    lexical = Path(model_dir()) / "lexical.npz"  # the lexical view and its weight change every score
    parts += [str(lexical.stat().st_mtime_ns) if lexical.exists() else "-"]
    meta = json.loads((Path(model_dir()) / "classifier.json").read_text(encoding="utf-8"))
    parts += [json.dumps(meta.get("lexical"), sort_keys=True)]
    if meta.get("sentences"):  # which texts have their sentences read alone changes their scores
        parts += [json.dumps(meta["sentences"], sort_keys=True)]
    parts += ["lexical-in-sample" if args.lexical_in_sample else "lexical-held-out"]
    parts += [str(args.docs), str(args.per_source), str(args.planted), args.skip_sources]
    parts += [f"draws per stratum, short {args.short}, 1 kB {args.small_docs}"]
    if args.long_docs:  # absent from older keys, so their caches stay valid
        parts += [f"long-docs {args.long_docs}"]
    # documents of prompt collections are scored (and never hosts) since the fifteenth round
    parts += ["prompt libraries: " + ",".join(sorted(PROMPT_SOURCES))]
    return hashlib.sha256(" ".join(parts).encode()).hexdigest()[:12]


def short_benign(per_source: int) -> list[Scored]:
    model = load(str(model_dir()))
    rng = random.Random(12)
    benign = [e for e in load_all() if e.label == "benign" and e.source not in OVER_DEFENCE]
    out = []
    for e in cap_per_source(benign, per_source, seed=12):
        out.append(score(model, e.text, e.source, "text", "benign"))
    rng.shuffle(out)
    return out


def short_attacks(per_source: int) -> list[Scored]:
    model = load(str(model_dir()))
    attacks = cap_per_source([e for e in load_all() if e.label != "benign"], per_source, seed=3)
    return [score(model, e.text, e.source, "text", e.label) for e in attacks]


def report(
    benign: list[Scored],
    attacks: list[Scored],
    planted: list[tuple[Scored, str]],
    groups: list[list[str]],
    *,
    write: bool,
    spike: bool = False,
    only: frozenset[str] = frozenset(),
    libraries: list[Scored] | None = None,
) -> None:
    """Held-out figures of the top-window rule alone and with the spike rule, then the shipped rules, and how
    often those flag ``libraries``: documents built of prompt collections (``PROMPT_SOURCES``).

    Benign sources in two groups (thresholds set on one, measured on the other) and attack sources in two
    groups (the spike rule's weight and share chosen on one group's attacks, alone and planted in the calibration
    group's documents, measured on the other group's attacks planted in the held-out group's documents): every planted
    figure is on attack sources and host documents the rule never saw."""
    attack_groups = source_folds(
        [Example("", p.label, p.source) for p, _ in planted], 2
    )  # whole attack sources
    out: dict[str, Any] = {"groups": groups, "attack_groups": attack_groups, "presets": {}}
    for name, budget in PRESETS.items():
        print(f"\n== {name}: {budget:.1%} of texts per length ==")
        # per rule: benign flags per (held-out doc id) and planted flags
        kinds = ("top", "spike", "top+s", "spike+s")  # "+s": with the sentence rule (with_sentences)
        benign_flags: dict[str, dict[int, list[bool]]] = {k: defaultdict(list) for k in kinds}
        planted_flags: dict[str, list[tuple[Scored, bool]]] = {k: [] for k in kinds}
        for g, grp in enumerate(groups):
            cal = [r for r in benign if r.source not in grp]
            held = [(i, r) for i, r in enumerate(benign) if r.source in grp]
            for h, agrp in enumerate(attack_groups):
                fit_on = [p for p, host in planted if host not in grp and p.source in agrp]
                alone = [r for r in attacks if r.source in agrp]
                test = [p for p, host in planted if host in grp and p.source not in agrp]
                rules = {"top": Rule(thresholds(cal, budget)), "spike": fit_rule(cal, fit_on, budget, alone)}
                rules["top+s"] = with_sentences(rules["top"], cal, budget)
                rules["spike+s"] = with_sentences(rules["spike"], cal, budget)
                for k, rule in rules.items():
                    for i, r in held:
                        benign_flags[k][i].append(flagged(r, rule))
                    planted_flags[k].extend((p, flagged(p, rule)) for p in test)
                sp = rules["spike"]
                print(
                    f"  benign group {g} held out, attack group {h} fitted: weight {sp.weight}, share {sp.share}, "
                    "top "
                    + " ".join(f"{b}:{v:.4f}" for b, v in sp.top.items())
                    + "; spike "
                    + " ".join(f"{b}:{v:.2f}" for b, v in (sp.spike or {}).items())
                )
        figures: dict[str, Any] = {}
        print(f"  {'length':8s} {'rule':6s} {'benign flagged (held-out sources)':36s} planted attacks caught")
        for bucket in BUCKETS:
            for k in kinds:
                flags = [float(np.mean(v)) for i, v in benign_flags[k].items() if benign[i].bucket == bucket]
                hits = [f for p, f in planted_flags[k] if p.bucket == bucket]
                fp = float(np.mean(flags)) if flags else float("nan")
                caught = float(np.mean(hits)) if hits else float("nan")
                figures.setdefault(k, {})[bucket] = {
                    "fpr": fp,
                    "n": len(flags),
                    "planted_recall": caught,
                    "planted_n": len(hits),
                }
                print(
                    f"  {bucket:8s} {k:6s} {fp:.3f} ({wilson(fp, len(flags))}, n={len(flags)})"
                    f"{'':10s} {caught:.3f} ({wilson(caught, len(hits))}, n={len(hits)})"
                )
        shipped = fit_rule(benign, [p for p, _ in planted], budget, attacks)
        shipped_s = with_sentences(shipped, benign, budget)
        top_s = with_sentences(Rule(thresholds(benign, budget)), benign, budget)
        recall = per_source_recall(attacks, shipped)
        print(
            "  top-window thresholds alone: "
            + " ".join(f"{b}:{v:.4f}" for b, v in thresholds(benign, budget).items())
        )
        recall_top = per_source_recall(attacks, Rule(thresholds(benign, budget)))
        recall_s = {
            "top": per_source_recall(attacks, top_s),
            "spike": per_source_recall(attacks, shipped_s),
        }
        for label, rec in (
            ("top-window rule", recall_top),
            ("with the spike rule", recall),
            ("top-window rule and sentences", recall_s["top"]),
            ("spike rule and sentences", recall_s["spike"]),
        ):
            trained = [v for s, v in rec.items() if s not in EVAL_ONLY]
            held_out = [v for s, v in rec.items() if s in EVAL_ONLY]
            print(
                f"  attacks alone, shipped {label}: mean recall per source {np.mean(trained):.3f} on "
                f"{len(trained)} trained sources, {np.mean(held_out) if held_out else float('nan'):.3f} on "
                f"{len(held_out)} evaluation-only sources"
            )
        for s, v in sorted(recall.items()):
            print(
                f"      {s:44s} {recall_top[s]:.3f} -> {v:.3f}{' (evaluation only)' if s in EVAL_ONLY else ''}"
            )
        library_flags: dict[str, dict[str, Any]] = {}
        for label, rule in (("top", top_s), ("spike", shipped_s)):
            for bucket in list(BUCKETS)[1:]:
                sel = [r for r in libraries or () if r.bucket == bucket]
                if sel:
                    k = float(np.mean([flagged(r, rule) for r in sel]))
                    library_flags.setdefault(label, {})[bucket] = {"fpr": k, "n": len(sel)}
                    print(
                        f"  prompt libraries ({', '.join(sorted({r.source for r in sel}))}) of {bucket}, "
                        f"shipped {label} rule with sentences: {k:.3f} flagged ({wilson(k, len(sel))}, "
                        f"n={len(sel)})"
                    )
        print(
            f"  shipped: weight {shipped.weight}, share {shipped.share}; top "
            + " ".join(f"{b}:{v:.4f}" for b, v in shipped.top.items())
            + "; spike "
            + " ".join(f"{b}:{v:.2f}" for b, v in (shipped.spike or {}).items())
        )
        out["presets"][name] = {
            "budget": budget,
            "held_out": figures,
            "recall": recall,
            "recall_top_only": recall_top,
            "recall_sentences": recall_s,
            "prompt_libraries": library_flags,
            "sentences": {
                name_: {
                    "top": rule.top,
                    "spike": rule.spike,
                    "weight": rule.weight,
                    "sentence": rule.sentence,
                }
                for name_, rule in (("top", top_s), ("spike", shipped_s))
            },
            "shipped": thresholds(benign, budget),  # the top-window rule alone, at the whole budget
            "spike": None
            if shipped.spike is None
            else {
                "weight": shipped.weight,
                "share": shipped.share,
                "top": shipped.top,
                "thresholds": shipped.spike,
            },
        }
    sweep(benign, planted, groups)
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text(json.dumps(out, indent=1), encoding="utf-8")
    if write:
        write_decision(out, spike=spike, only=only)


def per_source_recall(rows: list[Scored], rule: Rule) -> dict[str, float]:
    by: dict[str, list[bool]] = defaultdict(list)
    for r in rows:
        by[r.source].append(flagged(r, rule))
    return {s: float(np.mean(v)) for s, v in by.items()}


def logit(a: Any) -> np.ndarray:
    a = np.clip(np.asarray(a, float), 1e-4, 1 - 1e-4)
    return np.asarray(np.log(a / (1 - a)))


def aggregators() -> dict[str, Any]:
    """Document scores from the windows read, for the sweep: the top window, the spike at three weights,
    the mean of the top two windows, and a soft maximum (log-sum-exp of the windows' logits)."""

    def top(r: Scored) -> float:
        return float(logit([r.attack])[0])

    def spiked(w: float) -> Any:
        return lambda r: (
            top(r)
            if spike_score(r.wins, w) is None
            else float(top(r) - w * np.median(np.sort(logit(r.wins))[:-1]))
        )

    def top2(r: Scored) -> float:
        z = np.sort(logit(r.wins or (r.attack,)))
        return float(np.mean(z[-2:]))

    def lse(r: Scored) -> float:
        return float(np.log(np.exp(logit(r.wins or (r.attack,))).sum()))

    return {
        "top": top,
        "spike 0.25": spiked(0.25),
        "spike 0.5": spiked(0.5),
        "spike 1": spiked(1.0),
        "top-2 mean": top2,
        "log-sum-exp": lse,
    }


def sweep(benign: list[Scored], planted: list[tuple[Scored, str]], groups: list[list[str]]) -> None:
    """Per length, each aggregator's held-out (benign flagged, planted caught) at four budgets: the threshold
    set on one benign group's documents of that length, measured on the other group (both ways round)."""
    budgets = (0.01, 0.02, 0.05, 0.1)
    print(f"\n== evidence across windows: held-out benign flagged / planted caught, per budget {budgets} ==")
    for bucket in list(BUCKETS)[1:]:
        print(f"  {bucket}")
        for name, fn in aggregators().items():
            cells = []
            for budget in budgets:
                fps: list[bool] = []
                hits: list[bool] = []
                for grp in groups:
                    cal = [r for r in benign if r.source not in grp and r.bucket == bucket]
                    t = weighted_threshold(
                        np.array([fn(r) for r in cal]), weights(cal, cal), budget, -1e9, 1e9
                    )
                    fps += [fn(r) >= t for r in benign if r.source in grp and r.bucket == bucket]
                    hits += [fn(p) >= t for p, host in planted if host in grp and p.bucket == bucket]
                cells.append(f"{np.mean(fps):.3f} / {np.mean(hits):.3f}")
            print(f"    {name:12s} " + "   ".join(cells))


def write_decision(out: dict[str, Any], *, spike: bool = False, only: frozenset[str] = frozenset()) -> None:
    """Store the shipped thresholds in classifier.json: per preset, [windows, threshold] tables; with ``spike``,
    the spike rule too, on the presets in ``only`` (every preset when it is empty)."""
    path = Path(model_dir()) / "classifier.json"
    meta = json.loads(path.read_text(encoding="utf-8"))
    presets = {}
    for name, p in out["presets"].items():
        with_spike = spike and p["spike"] is not None and (not only or name in only)
        top = p["spike"]["top"] if with_spike else p["shipped"]
        spike_table = p["spike"]["thresholds"] if with_spike else None
        # the sentence rule, where the model reads sentences (classifier.json ``sentences``): its own rules
        sentences = p["sentences"]["spike" if with_spike else "top"]
        if meta.get("sentences") and sentences["sentence"]:
            top, spike_table = sentences["top"], sentences["spike"] if with_spike else None
        presets[name] = {
            "per_text_budget": p["budget"],
            "thresholds": [[int(b), round(v, 6)] for b, v in top.items()],  # near 1: 4 decimals lose it
        }
        if with_spike and spike_table:  # decision.py's spike rule: weight, [windows, logit threshold] rows
            # a bin without a spike threshold (beyond --spike-max-windows) never fires by it
            table = [[b, round(max(-99.0, min(spike_table.get(b, 99.0), 99.0)), 3)] for b in BINS[1:]]
            presets[name]["spike"] = {"weight": p["spike"]["weight"], "thresholds": [[1, 99.0], *table]}
        if meta.get("sentences") and sentences["sentence"]:  # decision.py's sentence rule
            rows = [[int(b), round(min(v, 2.0), 6)] for b, v in sentences["sentence"].items()]
            # beyond the calibrated bins, never (a probability does not reach 2)
            presets[name]["sentences"] = {"thresholds": [*rows, [BINS[-1], 2.0]]}
    meta["rule"] = "typed-attack"
    meta["decision"] = {
        "default": DEFAULT,
        "calibrated_by": "bench/calibrate_decision.py",
        "presets": presets,
    }
    path.write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
