"""A logistic scorer for credential-context candidates, fitted and cross-validated on the TRAIN split only.

Each candidate the context rules accept (``password = X``, ``--token X``, ...) is labelled by whether its line is
an expected finding's line, and described by text-only features (the scanner sees model output, not files): the
form and key that found it, the value's length, entropy and character mix, words in it, and the line around it.
Folds are grouped by file (a file's candidates never sit on both sides), repeated with several fold
assignments; precision and recall are the eval's line-level ones on held-out files, format-rule hits included
(they are not scored). ``--all`` also scores the candidates the hand filters reject (the scorer may rescue them).

Outcome (5 folds x 5 repeats): no (C, threshold) raises precision without losing recall. The hand filters leave
19 false-positive lines on train, 14 of them in one file (doc_id_passwd_pair) whose labels differ between
near-identical lines; with that file held out the other folds hold almost no such negatives, so there is
nothing that generalises to learn. Scoring the rejected candidates too finds one more finding for about six
more false-positive lines. The scanner therefore does not use a scorer; this script stays to re-run the check.

    .venv/bin/python bench/fit_secret_scorer.py [--all]      # grouped CV: baseline vs scorer per (C, threshold)
    .venv/bin/python bench/fit_secret_scorer.py --fit C T    # refit on all train files, print the weights
"""

from __future__ import annotations

import argparse
import bisect
import hashlib
import json
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from eval_secrets import expected_findings, read_text, split_files

from stockade.guardrails.checks.exfiltration.context import ContextCandidate
from stockade.guardrails.checks.exfiltration.plausibility import shannon_entropy
from stockade.guardrails.checks.exfiltration.secrets import SecretHit, SecretScanner, dedupe
from stockade.guardrails.checks.exfiltration.words import word_count

ALL_CANDIDATES = "--all" in sys.argv
DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "secrets"

# Candidate features: only the text is used (the scanner sees model output, not files, so no file name)
_PASSWORD_KEY = re.compile(r"(?i)pass|pwd|pw|p(?:s|ss|as)w|psw|identified|^-[upa]$")
_COMMENT = re.compile(r"\s*(?:#|//|--\s|/?\*|;|<!--|rem\s)", re.I)
_TESTISH = re.compile(r"(?i)test|example|sample|fake|dummy|mock|assert|expect")
_FORMS = {
    "assign": "form_assign",
    "flag": "form_flag",
    "tool_flag": "form_flag",
    "sql": "form_sql",
    "sql_with": "form_sql",
    "xml": "form_markup",
    "xml_pair": "form_markup",
}

FEATURES = (
    "form_assign",
    "form_flag",
    "form_sql",
    "form_markup",
    "key_password",
    "key_short",
    "key_flag",
    "quoted",
    "log_length",
    "entropy",
    "entropy_ratio",
    "char_classes",
    "digit_share",
    "upper_share",
    "symbol_share",
    "has_slash",
    "has_colon",
    "has_at",
    "has_dot",
    "has_dash",
    "words",
    "line_comment",
    "line_testish",
    "line_words",
    "pairs_on_line",
    "line_paren",
    "line_bracket",
    "line_dot",
    "line_dollar",
    "line_url",
    "line_at",
    "line_arrow",
    "key_id_or_test",
    "accepted",
)


def candidate_features(c: ContextCandidate, line: str, pairs_on_line: int) -> dict[str, float]:
    """Features of one candidate; ``line`` is the text line holding it, ``pairs_on_line`` how many candidates
    that line holds."""
    v = c.value
    n = len(v)
    bare_key = c.key.strip("-_.")
    f = dict.fromkeys(FEATURES, 0.0)
    f[_FORMS.get(c.form, "form_assign")] = 1.0 if c.form in _FORMS else 0.0
    f["key_password"] = float(bool(_PASSWORD_KEY.search(c.key)))
    f["key_short"] = float(len(bare_key) <= 3)
    f["key_flag"] = float(c.key.startswith("-"))
    f["quoted"] = float(c.quoted)
    f["log_length"] = math.log2(n)
    f["entropy"] = shannon_entropy(v)
    f["entropy_ratio"] = f["entropy"] / math.log2(n) if n > 1 else 0.0
    lower = sum(ch.islower() for ch in v)
    upper = sum(ch.isupper() for ch in v)
    digit = sum(ch.isdigit() for ch in v)
    symbol = n - lower - upper - digit
    f["char_classes"] = float(sum(x > 0 for x in (lower, upper, digit, symbol)))
    f["digit_share"] = digit / n
    f["upper_share"] = upper / n
    f["symbol_share"] = symbol / n
    f["has_slash"] = float("/" in v)
    f["has_colon"] = float(":" in v)
    f["has_at"] = float("@" in v)
    f["has_dot"] = float("." in v)
    f["has_dash"] = float("-" in v or "_" in v)
    f["words"] = float(word_count(v))
    f["line_comment"] = float(bool(_COMMENT.match(line)))
    f["line_testish"] = float(bool(_TESTISH.search(line)))
    f["line_words"] = math.log2(1 + len(re.findall(r"[A-Za-z]{3,}", line)))
    f["pairs_on_line"] = float(pairs_on_line > 1)
    f["line_paren"] = float("(" in line)
    f["line_bracket"] = float("[" in line)
    f["line_dot"] = float("." in line)
    f["line_dollar"] = float("$" in line)
    f["line_url"] = float("://" in line)
    f["line_at"] = float("@" in line)
    f["line_arrow"] = float("->" in line)
    f["key_id_or_test"] = float(bool(re.search(r"(?i)test|id\b|id[_A-Z]", c.key)))
    f["accepted"] = float(c.accepted)
    return f


@dataclass
class FileCands:
    name: str
    line_starts: list[int]
    hits: list[SecretHit]  # format rules, paired secrets, plugins
    spans: list[tuple[int, int]]  # accepted context candidates
    x: np.ndarray  # their features
    y: np.ndarray  # their labels

    def line(self, pos: int) -> int:
        return bisect.bisect_right(self.line_starts, pos)


def load(split: str = "train") -> tuple[list[FileCands], list[frozenset[tuple[str, int]]]]:
    assert split == "train", "the scorer is fitted and cross-validated on the train split only"
    root = DATA / "samples"
    files = split_files(root, split)
    expected = expected_findings(DATA / "expected_output.json", {str(f.relative_to(root)) for f in files})
    good = set().union(*expected)
    scanner = SecretScanner()
    out = []
    for f in files:
        text = read_text(f)
        name = str(f.relative_to(root))
        if text is None:  # skipped by the eval too: its expected findings count as missed
            out.append(FileCands(name, [0], [], [], np.zeros((0, len(FEATURES))), np.zeros(0)))
            continue
        starts = [0] + [i + 1 for i, c in enumerate(text) if c == "\n"]
        hits, cands = scanner.candidates(text)
        accepted = [c for c in cands if c.accepted or ALL_CANDIDATES]
        fc = FileCands(name, starts, hits, [], np.zeros((0, len(FEATURES))), np.zeros(0))
        per_line: dict[int, set[int]] = {}
        for c in accepted:
            per_line.setdefault(fc.line(c.start), set()).add(c.start)
        rows, labels = [], []
        for c in accepted:
            ln = fc.line(c.start)
            line = text[starts[ln - 1] : (starts[ln] - 1 if ln < len(starts) else len(text))]
            feats = candidate_features(c, line, len(per_line[ln]))
            rows.append([feats[k] for k in FEATURES])
            labels.append(float((name, ln) in good))
            fc.spans.append((c.start, c.end))
        if rows:
            fc.x, fc.y = np.array(rows), np.array(labels)
        out.append(fc)
    return out, expected


def fit_logistic(x: np.ndarray, y: np.ndarray, c: float) -> tuple[np.ndarray, float]:
    """L2-regularised logistic regression (Newton's method) on standardised features; returns weights and
    bias for the raw features. ``c`` is the inverse regularisation strength, as in scikit-learn."""
    mu, sd = x.mean(0), x.std(0)
    sd[sd == 0] = 1.0
    z = np.hstack([np.ones((len(x), 1)), (x - mu) / sd])
    w = np.zeros(z.shape[1])
    reg = np.full(z.shape[1], 1.0 / c)
    reg[0] = 0.0  # the bias is not penalised
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-z @ w))
        grad = z.T @ (p - y) + reg * w
        hess = z.T @ (z * (p * (1 - p))[:, None]) + np.diag(reg + 1e-9)
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    raw = w[1:] / sd
    return raw, float(w[0] - raw @ mu)


def predict(x: np.ndarray, w: np.ndarray, b: float) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-(x @ w + b)))


def line_counts(
    files: list[FileCands], keep: dict[str, np.ndarray], expected: list[frozenset[tuple[str, int]]]
) -> tuple[int, int, int, int]:
    """(reported lines, good reported lines, findings hit, findings) over ``files``."""
    names = {f.name for f in files}
    exp = [e for e in expected if next(iter(e))[0] in names]
    good = set().union(*exp) if exp else set()
    found = set()
    for f in files:
        hits = list(f.hits) + [
            SecretHit(s, e, "credential_in_context", 0.8) for (s, e), k in zip(f.spans, keep[f.name]) if k
        ]
        found |= {(f.name, f.line(h.start)) for h in dedupe(hits)}
    return len(found), len(found & good), sum(1 for e in exp if e & found), len(exp)


def folds(files: list[FileCands], k: int, salt: int) -> list[list[FileCands]]:
    out: list[list[FileCands]] = [[] for _ in range(k)]
    for f in files:
        out[int(hashlib.sha256(f"{salt}:{f.name}".encode()).hexdigest(), 16) % k].append(f)
    return out


def cross_validate(
    files: list[FileCands],
    expected: list[frozenset[tuple[str, int]]],
    cs: list[float],
    thresholds: list[float],
    k: int = 5,
    repeats: int = 5,
) -> dict[str, dict[str, float]]:
    """Out-of-fold line-level P/R summed over ``repeats`` fold assignments, per (C, threshold)."""
    totals: dict[str, np.ndarray] = {}

    def add(tag: str, counts: tuple[int, int, int, int]) -> None:
        totals[tag] = totals.get(tag, np.zeros(4)) + np.array(counts)

    for salt in range(repeats):
        for held in folds(files, k, salt):
            if not held:
                continue
            rest = [f for f in files if f not in held]
            x = np.vstack([f.x for f in rest])
            y = np.concatenate([f.y for f in rest])
            add("baseline", line_counts(held, {f.name: np.ones(len(f.y), bool) for f in held}, expected))
            for c in cs:
                w, b = fit_logistic(x, y, c)
                scores = {f.name: predict(f.x, w, b) if len(f.y) else np.zeros(0) for f in held}
                for t in thresholds:
                    add(f"C={c} t={t}", line_counts(held, {n: s >= t for n, s in scores.items()}, expected))
                    if ALL_CANDIDATES:
                        rescue = {f.name: (scores[f.name] >= t) | (f.x[:, -1] > 0) for f in held}
                        add(f"rescue C={c} t={t}", line_counts(held, rescue, expected))
    return {
        tag: {
            "precision": round(v[1] / v[0], 4),
            "recall": round(v[2] / v[3], 4),
            "fp_lines_per_repeat": round((v[0] - v[1]) / repeats, 1),
            "missed_per_repeat": round((v[3] - v[2]) / repeats, 1),
        }
        for tag, v in totals.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fit", nargs=2, type=float, metavar=("C", "THRESHOLD"))
    parser.add_argument("--all", action="store_true", help="Score rejected candidates too.")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    files, expected = load("train")
    if args.fit:
        c, t = args.fit
        x = np.vstack([f.x for f in files])
        y = np.concatenate([f.y for f in files])
        w, b = fit_logistic(x, y, c)
        print(
            json.dumps(
                {"bias": round(b, 4), "threshold": t, **{k: round(float(v), 4) for k, v in zip(FEATURES, w)}},
                indent=1,
            )
        )
        return
    res = cross_validate(
        files, expected, [0.01, 0.03, 0.1, 0.3, 1.0], [0.05, 0.1, 0.2, 0.3, 0.5], args.folds, args.repeats
    )
    for tag, r in res.items():
        print(f"{tag:20s} {json.dumps(r)}")


if __name__ == "__main__":
    main()
