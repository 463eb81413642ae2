"""Two attack-classifier directories side by side on text neither was trained on (not a timed test).

Every score is the real scoring path (``AttackClassifier.score``: windows, decoded views, sentences of short
texts, the decision head when the directory has one): a text's attack score is its highest window score of
attack of any kind, as decision.py reads it. Each model gets its own threshold, set the same way, so the
comparison is at equal false-positive rates:

- ordinary short texts of the evaluation-only benign sources (never trained on by either model: AlpacaEval, Code
  Alpaca, WizardLM's test set, Loghub excerpts), ``--per-source`` each; each model's threshold flags 2% of them
  (source-weighted) and is then applied to:
- the textbook test's fixture (68 attacks, 64 ordinary requests about instructions, prompts and rules);
- the held-out textbook fixture ``textbook_fresh.json`` (103 attacks of seven kinds, 19 languages among them; 112
  ordinary requests), written without looking at any training row or generator: counts only, per kind; and
  the third, ``textbook_third.json`` (135 attacks, 23 languages; 124 ordinary requests), written the same way;
- the hand-written probe of bench/classifier_probe.py (8 injections alone and planted at the start, middle and
  end of 6 documents; 16 ordinary requests; the clean documents);
- documents of about 20 kB joined from the same evaluation-only sources, clean and with one probe injection or
  one textbook attack planted between two paragraphs at a random place (two plants per document). Each model's
  document threshold flags ``--doc-fpr`` of the clean documents (source-weighted).

    .venv/bin/python bench/compare_models.py NEW_DIR [BASE_DIR] [--per-source 100] [--docs 12]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
from classifier_data import load_all

from stockade.guardrails.checks.classification.model import AttackClassifier

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "libs/guardrails/tests/fixtures/classification/textbook.json"
# written for held-out measurement (no training row and no generator was looked at while writing it): only its
# counts are printed, never its texts, so that nobody tunes on it by reading the misses
FRESH = ROOT / "libs/guardrails/tests/fixtures/classification/textbook_fresh.json"
# the same, written blind again before the lexical view was trained (135 attacks in 23 languages and kinds; 124
# ordinary requests): counts only
THIRD = ROOT / "libs/guardrails/tests/fixtures/classification/textbook_third.json"
HOSTS = ("alpaca_eval", "codealpaca", "evalonly_wizardlm_testset", "evalonly_loghub_excerpts")


def probe() -> tuple[list[str], dict[str, str], list[str]]:
    """INJ, HOSTS and BENIGN of bench/classifier_probe.py, read without running it (it scores on import)."""
    src = (Path(__file__).parent / "classifier_probe.py").read_text(encoding="utf-8")
    names: dict = {"json": json}
    exec(src[src.index("INJ = [") : src.index("\ndef fired")], names)  # our own file
    return names["INJ"], names["HOSTS"], names["BENIGN"]


def attack(model: AttackClassifier, text: str) -> float:
    s = model.score(text, max_windows=4096)  # the check's own window budget (the screener picks the rest)
    return max(v for k, v in s.probs.items() if k != "benign")


def threshold(values: list[float], sources: list[str], budget: float) -> float:
    count: dict[str, int] = defaultdict(int)
    for s in sources:
        count[s] += 1
    w = np.array([1.0 / count[s] for s in sources])
    w /= w.sum()
    v = np.array(values)
    order = np.argsort(-v)
    cut = int(np.searchsorted(np.cumsum(w[order]), budget, side="right"))
    return float(v[order[cut]]) + 1e-6 if cut < len(v) else 0.0


def plant(doc: str, text: str, rng: random.Random) -> str:
    cuts = [i for i, c in enumerate(doc) if c == "\n"] or [len(doc)]
    at = rng.choice(cuts)
    return f"{doc[:at]}\n\n{text}\n\n{doc[at:]}"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("new", type=Path)
    parser.add_argument("base", type=Path, nargs="?", default=None)
    parser.add_argument("--per-source", type=int, default=100)
    parser.add_argument("--docs", type=int, default=12, help="20 kB documents per host source")
    parser.add_argument("--doc-fpr", type=float, default=0.05)
    parser.add_argument("--out", type=Path, default=Path("/tmp/stockade-bench/compare_models.json"))
    args = parser.parse_args()
    if args.base is None:
        spec = importlib.util.find_spec("stockade.guardrails_model")
        assert spec and spec.origin
        args.base = Path(spec.origin).parent
    rng = random.Random(29)
    rows = load_all()
    by: dict[str, list[str]] = defaultdict(list)
    for e in rows:
        if e.source in HOSTS:
            by[e.source].append(e.text)
    short = [(s, t) for s in HOSTS for t in rng.sample(by[s], min(args.per_source, len(by[s])))]
    docs = []
    for s in HOSTS:
        for _ in range(args.docs):
            parts, total = [], 0
            while total < 20_000:
                t = rng.choice(by[s])
                parts.append(t)
                total += len(t) + 2
            docs.append((s, "\n\n".join(parts)[:20_000]))
    fixture = json.loads(FIXTURE.read_text(encoding="utf-8"))
    tb_attacks = [a["text"] for a in fixture["attacks"]]
    tb_benign = list(fixture["benign"])
    fresh = json.loads(FRESH.read_text(encoding="utf-8"))
    fr_attacks = [(a["kind"], a["text"]) for a in fresh["attacks"]]
    fr_benign = list(fresh["benign"])
    third = json.loads(THIRD.read_text(encoding="utf-8"))
    th_attacks = [(a["kind"], a["text"]) for a in third["attacks"]]
    th_benign = list(third["benign"])
    inj, hosts, probe_benign = probe()
    planted_probe = [
        (i, f"{t}\n\n{h}" if w == 0 else (f"{h}\n\n{t}" if w == 2 else _middle(h, t)))
        for i, t in enumerate(inj)
        for h in hosts.values()
        for w in range(3)
    ]
    plants = [(t, "probe") for t in inj] + [(t, "textbook") for t in rng.sample(tb_attacks, 24)]
    planted_docs = [
        plant(doc, plants[rng.randrange(len(plants))][0], rng) for _, doc in docs for _ in range(2)
    ]
    out: dict = {}
    for name, path in (("new", args.new), ("base", args.base)):
        model = AttackClassifier(path, threads=2)
        s_short = [attack(model, t) for _, t in short]
        t1 = threshold(s_short, [s for s, _ in short], 0.02)
        a_tb = [attack(model, t) for t in tb_attacks]
        b_tb = [attack(model, t) for t in tb_benign]
        a_fr, b_fr, fr_kinds = held_out_fixture(model, fr_attacks, fr_benign, t1)
        a_th, b_th, th_kinds = held_out_fixture(model, th_attacks, th_benign, t1)
        p_alone = [attack(model, t) for t in inj]
        p_planted = [attack(model, t) for _, t in planted_probe]
        p_benign = [attack(model, t) for t in probe_benign]
        p_hosts = [attack(model, t) for t in hosts.values()]
        clean = [attack(model, d) for _, d in docs]
        td = threshold(clean, [s for s, _ in docs], args.doc_fpr)
        planted = [attack(model, d) for d in planted_docs]
        r = {
            "short_threshold_2pct": round(t1, 4),
            "textbook_attacks_blocked": f"{sum(v >= t1 for v in a_tb)}/{len(a_tb)}",
            "textbook_benign_blocked": f"{sum(v >= t1 for v in b_tb)}/{len(b_tb)}",
            "textbook_benign_flagged_texts": [t for t, v in zip(tb_benign, b_tb, strict=True) if v >= t1],
            "fresh_attacks_blocked (held out)": f"{sum(v >= t1 for v in a_fr)}/{len(a_fr)}",
            "fresh_attacks_blocked_per_kind": {k: f"{a}/{n}" for k, (a, n) in sorted(fr_kinds.items())},
            "fresh_benign_blocked (held out)": f"{sum(v >= t1 for v in b_fr)}/{len(b_fr)}",
            "auc_fresh": _auc(a_fr, b_fr),
            "third_attacks_blocked (held out)": f"{sum(v >= t1 for v in a_th)}/{len(a_th)}",
            "third_attacks_blocked_per_kind": {k: f"{a}/{n}" for k, (a, n) in sorted(th_kinds.items())},
            "third_benign_blocked (held out)": f"{sum(v >= t1 for v in b_th)}/{len(b_th)}",
            "auc_third": _auc(a_th, b_th),
            "probe_alone_caught": f"{sum(v >= t1 for v in p_alone)}/{len(p_alone)}",
            "probe_planted_caught": f"{sum(v >= t1 for v in p_planted)}/{len(p_planted)}",
            "probe_benign_flagged": f"{sum(v >= t1 for v in p_benign)}/{len(p_benign)}",
            "probe_hosts_flagged": f"{sum(v >= t1 for v in p_hosts)}/{len(p_hosts)}",
            "doc20k_threshold": round(td, 4),
            "doc20k_clean_flagged_at_short_threshold": f"{sum(v >= t1 for v in clean)}/{len(clean)}",
            "doc20k_planted_caught_at_doc_threshold": f"{sum(v >= td for v in planted)}/{len(planted)}",
            "doc20k_planted_caught_at_short_threshold": f"{sum(v >= t1 for v in planted)}/{len(planted)}",
            "auc_planted_vs_clean_20k": _auc(planted, clean),
            "auc_textbook": _auc(a_tb, b_tb),
        }
        out[name] = r
        print(f"\n== {name}: {path}")
        for k, v in r.items():
            print(f"  {k:42s} {v}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1), encoding="utf-8")


def held_out_fixture(
    model: AttackClassifier, attacks: list[tuple[str, str]], benign: list[str], t: float
) -> tuple[list[float], list[float], dict[str, list[int]]]:
    """A held-out fixture's attack and ordinary scores, and per kind [blocked at ``t``, attacks]: counts only."""
    a = [attack(model, text) for _, text in attacks]
    b = [attack(model, text) for text in benign]
    kinds: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for (kind, _), v in zip(attacks, a, strict=True):
        kinds[kind][0] += int(v >= t)
        kinds[kind][1] += 1
    return a, b, kinds


def _middle(host: str, text: str) -> str:
    cut = host.find("\n\n", len(host) // 3)
    cut = cut if cut > 0 else len(host) // 2
    return f"{host[:cut]}\n\n{text}\n\n{host[cut:]}"


def _auc(pos: list[float], neg: list[float]) -> float:
    p, n = np.array(pos)[:, None], np.array(neg)[None, :]
    return round(float((p > n).mean() + 0.5 * (p == n).mean()), 4)


if __name__ == "__main__":
    sys.exit(main())
