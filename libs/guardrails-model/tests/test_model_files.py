"""The shipped model package: its files load without torch, agree with each other and stay small."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

from stockade.guardrails_model import model_dir

ROOT = Path(__file__).resolve().parents[3]


def test_files_are_there_and_small() -> None:
    files = {p.name: p.stat().st_size for p in model_dir().iterdir() if p.is_file()}
    assert {"model.onnx", "tokenizer.json", "screener.npz", "classifier.json"} <= set(files)
    assert sum(files.values()) < 30_000_000  # the size the README promises users


def test_model_runs_and_returns_one_probability_per_label() -> None:
    meta = json.loads((model_dir() / "classifier.json").read_text(encoding="utf-8"))
    assert meta["labels"] == ["benign", "injection", "jailbreak", "malicious"]
    assert set(meta["thresholds"]) == {"injection", "jailbreak", "malicious"}
    tok = Tokenizer.from_file(str(model_dir() / "tokenizer.json"))
    tok.no_padding()
    tok.no_truncation()
    enc = tok.encode("What time does the museum open on Sundays?")
    assert len(enc.ids) <= meta["window"]
    session = ort.InferenceSession(str(model_dir() / "model.onnx"), providers=["CPUExecutionProvider"])
    ids = np.asarray([enc.ids], dtype=np.int64)
    [probs] = session.run(["probs"], {"input_ids": ids, "attention_mask": np.ones_like(ids)})
    assert probs.shape == (1, 4)
    assert abs(float(probs.sum()) - 1.0) < 1e-3


def test_screener_matches_the_tokenizer_vocabulary() -> None:
    with np.load(model_dir() / "screener.npz") as data:
        assert data["weights"].shape[1] == 4 and data["bias"].shape == (4,)


def test_the_lexical_view_has_one_weight_per_hash_bucket_and_a_stacking_weight() -> None:
    from stockade.guardrails.checks.classification.lexical import BUCKETS

    meta = json.loads((model_dir() / "classifier.json").read_text(encoding="utf-8"))
    assert meta["lexical"]["weight"] > 0 and meta["lexical"]["max_windows"] >= 1
    with np.load(model_dir() / "lexical.npz") as data:
        assert data["weights"].shape == (BUCKETS,) and np.isfinite(data["weights"]).all()


def test_loading_needs_no_torch() -> None:
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "from stockade.guardrails.checks.classification.model import AttackClassifier\n"
        "from stockade.guardrails_model import model_dir\n"
        "m = AttackClassifier(model_dir())\n"
        "print(m.score('hello there', max_windows=4).read)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "1"


def test_the_ml_extra_pulls_no_torch() -> None:
    extras = tomllib.loads((ROOT / "libs" / "guardrails" / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    heavy = ("torch", "transformers", "sentence-transformers")
    assert not [r for r in extras["ml"] if r.split(">")[0].split("=")[0] in heavy]
    assert any(r.startswith("stockade-guardrails-model") for r in extras["ml"])
