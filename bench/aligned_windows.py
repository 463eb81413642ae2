"""Windows that start where a paragraph (or line) starts, read beside or instead of the check's fixed-offset
windows: do they separate attacks planted in documents from clean documents better? Not a timed test; the check
is not changed.

An attack planted at a paragraph break is cut wherever the fixed windows' edges fall (every 40 tokens); a window
that starts at the attack's first token holds all of a short attack and the prose after it. Per document three
readings, each scored as the check scores a window (class rule, 1 - P(benign), the highest window; decoded views,
sentences and the lexical view left out for all three): ``fixed`` (the check's windows; the screener picks 16 of
a long text), ``aligned`` (windows at every paragraph start that is not already a window start; the screener
picks ``--budget``) and ``union`` (the screener picks 16 + ``--budget`` among both, so it reads more). Per length,
each reading at its own threshold flagging 2% of the clean documents (calibrate_decision.py's draw; prompt
collections left out; in-sample, so the figures compare readings, they are not the README's), and its AUC.

    .venv/bin/python bench/aligned_windows.py [MODEL_DIR] [--budget 16]   # about 8 minutes
"""

from __future__ import annotations

import argparse
import pickle
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

import calibrate_decision as cd
from screen_planted import SKIP, auc
from window_scores import model_dir

from stockade.guardrails.checks.classification.class_scores import window_scores
from stockade.guardrails.checks.classification.model import load
from stockade.guardrails.checks.classification.windows import pick_windows, window_starts

CACHE = Path("/tmp/stockade-bench/aligned")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dir", nargs="?", default=str(model_dir()))
    p.add_argument("--docs", type=int, default=8)
    p.add_argument("--long-docs", type=int, default=8)
    p.add_argument("--small-docs", type=int, default=12)
    p.add_argument("--planted", type=int, default=16)
    p.add_argument("--per-source", type=int, default=30)
    p.add_argument("--short", type=int, default=30)
    p.add_argument("--skip-sources", default=SKIP)
    p.add_argument("--budget", type=int, default=16, help="aligned windows read per long text")
    a = p.parse_args()
    by_source, _ = cd.build(a)
    tasks = [t for ts in by_source.values() for t in ts if t[2] != "text"]
    m = load(a.dir)
    body = m.window - 2
    benign = m.labels.index("benign")
    cache = CACHE / f"{Path(a.dir).name}_{a.budget}_{a.docs}_{a.long_docs}_{a.small_docs}_{a.planted}.pickle"
    if cache.exists():
        rows = pickle.loads(cache.read_bytes())
    else:
        rows = []
        for k, (text, src, bucket, label, host, _) in enumerate(tasks):
            enc = m.tokenizer.encode(text, add_special_tokens=False)
            ids, off = enc.ids, enc.offsets
            fixed = window_starts(len(ids), body, m.stride)
            para = sorted(
                {t for t in range(1, len(ids)) if "\n" in text[off[t - 1][1] : off[t][0]]} - set(fixed)
            )

            def pick(starts: list[int], n: int, ids: list[int] = ids) -> list[list[int]]:
                wins = [ids[s : s + body] for s in starts]
                if len(wins) <= n:
                    return wins
                return [wins[i] for i in pick_windows(m.screener.attack_scores(wins), n)]

            def best(wins: list[list[int]]) -> float:
                if not wins:
                    return 0.0
                probs, *_ = m._forward(wins)
                return float((1 - window_scores(probs, m.labels, m.rule)[:, benign]).max())

            read = (
                pick(fixed, m.model_windows),
                pick(para, a.budget),
                pick(fixed + para, a.budget + m.model_windows),
            )
            rows.append((src, bucket, label, host, *map(best, read), len(fixed), len(para)))
            if k % 200 == 0:
                print(f"{k}/{len(tasks)} documents read", flush=True)
        CACHE.mkdir(parents=True, exist_ok=True)
        cache.write_bytes(pickle.dumps(rows))
    for b in list(cd.BUCKETS)[1:]:
        neg = [r for r in rows if r[1] == b and r[2] == "benign" and r[0] not in cd.PROMPT_SOURCES]
        pos = [r for r in rows if r[1] == b and r[2] != "benign" and r[3]]
        windows, paragraphs = np.mean([r[7] for r in neg]), np.mean([r[8] for r in neg])
        print(
            f"{b}: {len(neg)} clean, {len(pos)} planted; {windows:.0f} windows, {paragraphs:.0f} paragraph starts"
        )
        for name, j in (("fixed", 4), ("aligned", 5), ("union", 6)):
            c, s = np.array([r[j] for r in neg]), np.array([r[j] for r in pos])
            t = float(np.quantile(c, 0.98))
            print(f"    {name}: threshold {t:.4f} caught {(s > t).mean():.3f} AUC {auc(s, c):.3f}")


if __name__ == "__main__":
    main()
