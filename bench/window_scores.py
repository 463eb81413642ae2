"""Per-window class probabilities and fifth-layer vectors of the shipped classifier, for the decision head.

The windows are cut exactly as the check cuts them (model.py: 62-token bodies every 40 tokens); each window
gets its four class probabilities and the unit-length mean of the model's fifth layer (the head's input,
see libs/guardrails/.../classification/head.py). Results are cached under /tmp/stockade-bench by a hash of
the texts and the model file, so refits do not score again.
"""

from __future__ import annotations

import hashlib
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "libs" / "guardrails" / "src"))
sys.path.insert(0, str(ROOT / "libs" / "guardrails-model" / "src"))

from stockade.guardrails.checks.classification.head import EMBEDDING_OUTPUT, pooled  # noqa: E402
from stockade.guardrails.checks.classification.model import load  # noqa: E402
from stockade.guardrails.checks.classification.windows import window_starts  # noqa: E402
from stockade.guardrails_model import model_dir  # noqa: E402

CACHE = Path("/tmp/stockade-bench")


def windows_of(texts: list[str], max_per_text: int) -> tuple[list[list[int]], np.ndarray]:
    """The token windows of each text (at most ``max_per_text``), and each window's text index."""
    model = load(str(model_dir()))
    body = model.window - 2
    wins, owner = [], []
    for i, text in enumerate(texts):
        ids = model.tokenizer.encode(text, add_special_tokens=False).ids
        for s in window_starts(len(ids), body, model.stride)[:max_per_text]:
            wins.append(ids[s : s + body])
            owner.append(i)
    return wins, np.asarray(owner, dtype=np.int64)


def score(texts: list[str], max_per_text: int = 8, tag: str = "") -> dict[str, Any]:
    """``probs`` (windows x 4), ``emb`` (windows x 384, float16) and ``owner`` (the text of each window)."""
    model_file = Path(model_dir()) / "model.onnx"
    key = hashlib.sha256()
    key.update(str(model_file.stat().st_size).encode())
    key.update(str(max_per_text).encode())
    for t in texts:
        key.update(t.encode())
    path = CACHE / f"windows-{tag}-{key.hexdigest()[:16]}.npz"
    if path.exists():
        with np.load(path) as data:
            return {k: data[k] for k in data.files}
    model = load(str(model_dir()))
    wins, owner = windows_of(texts, max_per_text)
    order = np.argsort([len(w) for w in wins], kind="stable")
    probs = np.zeros((len(wins), len(model.labels)), np.float32)
    emb = np.zeros((len(wins), 384), np.float16)
    t0 = time.time()
    for b in range(0, len(order), 64):
        idx = order[b : b + 64]
        width = max(len(wins[i]) for i in idx) + 2
        ids = np.zeros((len(idx), width), np.int64)
        mask = np.zeros_like(ids)
        for r, i in enumerate(idx):
            seq = [model.cls_id, *wins[i], model.sep_id]
            ids[r, : len(seq)] = seq
            mask[r, : len(seq)] = 1
        p, h = model.session.run(["probs", EMBEDDING_OUTPUT], {"input_ids": ids, "attention_mask": mask})
        probs[idx] = p
        emb[idx] = pooled(h, mask)
        if b and b % 12800 == 0:
            print(f"  {tag}: {b}/{len(order)} windows, {time.time() - t0:.0f} s", file=sys.stderr)
    CACHE.mkdir(parents=True, exist_ok=True)
    np.savez(path, probs=probs, emb=emb, owner=owner)
    return {"probs": probs, "emb": emb, "owner": owner}
