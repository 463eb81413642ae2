"""The labelled texts the attack classifier is trained and evaluated on, each tagged with its source.

Sources (see ../shared/data/README.md and ../shared/data/injection/README.md for licences and how each was built):
- every file of ../shared/data/injection (one source per file);
- ../shared/data/jailbreak (jackhhao/llm-warden, train and test files: one source, ``llm-warden``);
- ``bench/data/classifier/*.jsonl``: extra public sources fetched for breadth (one source per file, licences in
  that folder's README); ``evalonly_*.jsonl`` files there are evaluation-only like the four below;
- ``python-docs``: paragraphs of the docstrings of Python's standard library (PSF licence), benign documents
  full of words like "ignore", "instructions", "system" and "password" used innocently. Taken from the running
  interpreter, so the same Python version gives the same texts.

Four injection files are evaluation-only by licence (non-commercial or never licensed by their authors): they are
never used to fit what ships, only to measure it (EVAL_ONLY).
"""

from __future__ import annotations

import csv
import hashlib
import importlib
import inspect
import json
import pkgutil
import random
import re
import sys
from dataclasses import dataclass
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
if not DATA.exists():
    DATA = Path("/work/shared/data")

LABELS = ("benign", "injection", "jailbreak", "malicious")
ATTACKS = LABELS[1:]
EXTRA = Path(__file__).resolve().parent / "data" / "classifier"
EVAL_ONLY = frozenset(
    {"codealpaca", "alpaca_eval", "donotanswer", "bigpromptlib_system_prompts"}
    | {p.stem for p in EXTRA.glob("evalonly_*.jsonl")}
)
# Over-defence benchmarks: benign text written to look like an attack (trigger words, "ignore your guidelines"
# framing that asks for something harmless, homonyms such as "kill a Python process", borderline security
# questions). They train the model like any benign source; their false positives are reported on their own
# and do not set the shipped thresholds, which are chosen on ordinary text (train_classifier.choose_thresholds).
OVER_DEFENCE = frozenset({"notinject", "wildguard_benign", "xstest", "cyberseceval_frr"})
# Reserved for a separate evaluation (issue 14): never read, never fetched.
RESERVED = ("JailbreakBench", "tensor-trust", "self-instruct", "jailbreak_llms")


@dataclass(frozen=True)
class Example:
    text: str
    label: str
    source: str
    span: tuple[int, int] | None = None  # where a planted attack lies in ``text`` (characters), else None


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def load_injection(extra: bool = True) -> list[Example]:
    """../shared/data/injection, then (``extra``) the sources in bench/data/classifier (one source per file)."""
    out = []
    for path in [
        *sorted((DATA / "injection").glob("*.jsonl")),
        *(sorted(EXTRA.glob("*.jsonl")) if extra else []),
    ]:
        with path.open(encoding="utf-8") as fh:
            for line in fh:
                row = json.loads(line)
                if any(r.lower() in row["source"].lower() for r in RESERVED):
                    raise SystemExit(f"{path.name}: a row names a reserved source ({row['source']})")
                if row["label"] not in LABELS:
                    raise SystemExit(f"{path.name}: unknown label {row['label']!r} (one of {LABELS})")
                out.append(Example(row["text"], row["label"], path.stem))
    return out


def load_llm_warden(split: str | None = None) -> list[Example]:
    out = []
    for part in ("train", "test") if split is None else (split,):
        with (DATA / "jailbreak" / f"jailbreak_dataset_{part}.csv").open(encoding="utf-8", newline="") as fh:
            for row in csv.DictReader(fh):
                out.append(Example(row["prompt"], row["type"], "llm-warden"))
    return out


_SKIP_MODULES = re.compile(r"(^|\.)(test|tests|idlelib|lib2to3|turtledemo|__main__|antigravity|this)(\.|$)")


def load_python_docs(limit: int = 1500, seed: int = 7) -> list[Example]:
    """Paragraphs (200-1,500 characters) of standard-library docstrings, sampled with a fixed seed."""
    paragraphs: set[str] = set()
    names = sorted(m.name for m in pkgutil.iter_modules() if m.name in sys.stdlib_module_names)
    for name in names:
        if _SKIP_MODULES.search(name) or name.startswith("_"):
            continue
        try:
            module = importlib.import_module(name)
        except Exception:  # some stdlib modules need a platform or a GUI
            continue
        docs = [inspect.getdoc(module)]
        for _, obj in sorted(vars(module).items()):
            if getattr(obj, "__module__", None) == name and (inspect.isclass(obj) or inspect.isfunction(obj)):
                docs.append(inspect.getdoc(obj))
        for doc in docs:
            for para in re.split(r"\n\s*\n", doc or ""):
                para = para.strip()
                if 200 <= len(para) <= 1500 and not para.startswith(">>>"):
                    paragraphs.add(para)
    ordered = sorted(paragraphs, key=lambda p: hashlib.sha256(p.encode()).hexdigest())
    random.Random(seed).shuffle(ordered)
    return [Example(p, "benign", "python-docs") for p in ordered[:limit]]


def load_all(extra: bool = True) -> list[Example]:
    """Every source (``extra``: with bench/data/classifier), de-duplicated on normalised text across sources
    (first occurrence kept)."""
    seen: set[str] = set()
    out = []
    for ex in [*load_injection(extra), *load_llm_warden(), *load_python_docs()]:
        key = _norm(ex.text)
        if key in seen or len(key) < 10:
            continue
        seen.add(key)
        out.append(ex)
    return out


def embed_attacks(
    examples: list[Example], n: int, seed: int = 11, anywhere: bool = False
) -> list[tuple[Example, str, str]]:
    """Attacks placed inside ordinary text, as indirect injection arrives: an injection or jailbreak text (at
    most 600 characters) between two paragraphs of a benign document (a slice of 200-500 characters before and
    after it); with ``anywhere``, at the start, in the middle or at the end of that slice, one third each.
    Returns (example, attack source, host source); the label is the attack's, and the example's ``span`` says
    where the attack lies. Built only from trainable sources, so each cross-source fold can keep the ones whose
    two sources it trains on."""
    rng = random.Random(seed)
    attacks = [
        e
        for e in examples
        if e.label in ("injection", "jailbreak") and len(e.text) <= 600 and e.source not in EVAL_ONLY
    ]
    hosts = [e for e in examples if e.label == "benign" and len(e.text) >= 400 and e.source not in EVAL_ONLY]
    out = []
    for _ in range(n):
        a, h = rng.choice(attacks), rng.choice(hosts)
        cut = rng.randrange(0, max(1, len(h.text) - 400))
        before = h.text[cut : cut + rng.randrange(200, 500)]
        after = h.text[cut + len(before) : cut + len(before) + rng.randrange(200, 500)]
        where = rng.choice(("start", "middle", "end")) if anywhere else "middle"
        if where == "start":
            text, at = f"{a.text}\n\n{before}{after}", 0
        elif where == "end":
            text, at = f"{before}{after}\n\n{a.text}", len(before) + len(after) + 2
        else:
            text, at = f"{before}\n\n{a.text}\n\n{after}", len(before) + 2
        span = (at, at + len(a.text))
        out.append((Example(text, a.label, f"embedded:{a.source}+{h.source}", span), a.source, h.source))
    return out


def label_conflicts(
    examples: list[Example], idx: list[int], threshold: float, chars: int = 1000
) -> list[tuple[int, int, float]]:
    """The label-consistency pass: pairs of texts of ``idx`` from different sources, one labelled benign and
    the other an attack, that are nearly the same text (cosine of their character 3-5-gram TF-IDF vectors, over
    the first ``chars`` characters, at least ``threshold``). Two sources that call the same text benign and
    malicious teach opposite lessons; pairs within one source are left alone (the contrast sources pair an
    instruction addressed to a person with the same one addressed to the model on purpose)."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    texts = [_norm(examples[i].text)[:chars] for i in idx]
    matrix = TfidfVectorizer(
        analyzer="char_wb", ngram_range=(3, 5), min_df=2, sublinear_tf=True
    ).fit_transform(texts)
    attack = [examples[i].label != "benign" for i in idx]
    src = [examples[i].source for i in idx]
    pairs = []
    for lo in range(0, len(idx), 2000):
        block = (matrix[lo : lo + 2000] @ matrix.T).tocoo()
        for r, c, v in zip(block.row, block.col, block.data, strict=True):
            a, b = lo + int(r), int(c)
            if a < b and v >= threshold and attack[a] != attack[b] and src[a] != src[b]:
                pairs.append((idx[a], idx[b], float(v)))
    return pairs


def sources(examples: list[Example]) -> list[str]:
    return sorted({e.source for e in examples})


def cap_per_source(examples: list[Example], cap: int, seed: int = 7) -> list[Example]:
    """At most ``cap`` examples per (source, label), sampled with a fixed seed: templated sources (BIPIA, garak,
    CyberSecEval's translations) would otherwise teach the model their few wrappers."""
    groups: dict[tuple[str, str], list[Example]] = {}
    for e in examples:
        groups.setdefault((e.source, e.label), []).append(e)
    rng = random.Random(seed)
    out = []
    for key in sorted(groups):
        group = groups[key]
        out.extend(group if len(group) <= cap else rng.sample(group, cap))
    return out


def source_folds(examples: list[Example], k: int) -> list[list[str]]:
    """Whole sources dealt into ``k`` folds (each source in exactly one). Sources are ordered by their main
    label, then by size, and dealt round-robin, so every fold keeps sources of every label to train on."""
    sizes: dict[str, dict[str, int]] = {}
    for e in examples:
        sizes.setdefault(e.source, {}).setdefault(e.label, 0)
        sizes[e.source][e.label] += 1

    def key(src: str) -> tuple[int, int, str]:
        main = max(sizes[src], key=lambda lbl: (sizes[src][lbl], lbl))
        return (LABELS.index(main), -sum(sizes[src].values()), src)

    folds: list[list[str]] = [[] for _ in range(k)]
    for n, src in enumerate(sorted(sizes, key=key)):
        folds[n % k].append(src)
    return folds


def _main() -> None:
    import argparse
    from collections import Counter

    parser = argparse.ArgumentParser(
        description="the sources, their labels, and (--conflicts) label conflicts"
    )
    parser.add_argument(
        "--conflicts",
        type=float,
        default=0.0,
        help="print near-duplicate texts of two sources labelled benign and attack (TF-IDF cosine, e.g. 0.8)",
    )
    parser.add_argument(
        "--cap", type=int, default=150, help="--conflicts: texts per (source, label) compared"
    )
    args = parser.parse_args()
    rows = load_all()
    counts = Counter((e.source, e.label) for e in rows)
    for src in sources(rows):
        tag = " (evaluation only)" if src in EVAL_ONLY else ""
        print(f"{src:40s} {dict((lbl, n) for (s, lbl), n in counts.items() if s == src)}{tag}")
    print("total", len(rows), Counter(e.label for e in rows))
    if args.conflicts:
        sample = cap_per_source([e for e in rows if e.source not in EVAL_ONLY], args.cap)
        pairs = label_conflicts(sample, list(range(len(sample))), args.conflicts)
        print(f"\n{len(pairs)} conflicting pairs at cosine >= {args.conflicts} among {len(sample)} texts")
        for a, b, v in sorted(pairs, key=lambda p: -p[2]):
            for e in (sample[a], sample[b]):
                print(f"  {v:.2f} {e.source}/{e.label}: {e.text[:100]!r}")


if __name__ == "__main__":
    _main()
