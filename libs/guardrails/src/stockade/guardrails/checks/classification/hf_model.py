"""Any Hugging Face sequence-classification model directory, run by onnxruntime (``model_path``; no torch).

The directory holds ``config.json`` (``id2label``; ``problem_type`` multi_label_classification means sigmoid
outputs, else softmax), ``tokenizer.json`` (read with the ``tokenizers`` library), ``model.onnx`` (or
``onnx/model.onnx``, as ProtectAI's repositories ship it; inputs ``input_ids``, ``attention_mask`` and, when the
model has them, ``token_type_ids``; the first output is the logits) and optionally ``stockade.json`` (written
by ``stockade convert-classifier``: ``label_map``, ``thresholds``, ``window``, ``stride``). Prompt Guard 2,
ProtectAI deberta-v3 v2 and PIGuard exported to ONNX have this layout.

A text is tokenised once without special tokens and cut into windows of the model's length (its
``tokenizer_config.json`` ``model_max_length`` or ``config.json`` ``max_position_embeddings``, at most 512)
less the tokens its template adds (found by encoding a probe with and without them), a quarter of each window
shared with the next. Every window is read; the check's thresholds then apply as for the shipped model.
"""

from __future__ import annotations

import json
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any

from stockade.guardrails.checks.classification.backends import (
    CLASS_ORDER,
    DEFAULT_THRESHOLD,
    best_over_windows,
    class_matrix,
    label_classes,
)
from stockade.guardrails.checks.classification.class_scores import TYPED_ATTACK
from stockade.guardrails.checks.classification.model import Scores, TextTooLongError
from stockade.guardrails.checks.classification.windows import window_starts
from stockade.guardrails.errors import CheckUnavailableError
from stockade.guardrails.extras import require

FEATURE = "content classification (model_path)"
WHERE = "guardrails.checks.classification.label_map"
MAX_WINDOW = 512
BATCH = 8
_ONNX_FILES = ("model.onnx", "onnx/model.onnx")
POSITION_OFFSET = {"roberta": 2, "xlm-roberta": 2, "camembert": 2}  # positions they reserve for padding


def _json(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    return data if isinstance(data, dict) else {}


class SequenceClassifier:
    """Loads once per directory and process (see :func:`load_sequence_classifier`); ``score`` is thread-safe."""

    def __init__(self, directory: Path, *, label_map: dict[str, str] | None = None, threads: int = 1) -> None:
        ort = require("onnxruntime", extra="ml", feature=FEATURE)
        tokenizers = require("tokenizers", extra="ml", feature=FEATURE)
        require("numpy", extra="ml", feature=FEATURE)
        try:
            config = _json(directory / "config.json")
            id2label = config["id2label"]
            self.labels = [str(id2label[k]) for k in sorted(id2label, key=int)]
            own = _json(directory / "stockade.json")
            tok_config = _json(directory / "tokenizer_config.json")
            tokenizer = tokenizers.Tokenizer.from_file(str(directory / "tokenizer.json"))
            onnx_file = next((directory / f for f in _ONNX_FILES if (directory / f).exists()), None)
            if onnx_file is None:
                raise FileNotFoundError(f"no {' or '.join(_ONNX_FILES)}")
            options = ort.SessionOptions()
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
            self.session = ort.InferenceSession(str(onnx_file), options, providers=["CPUExecutionProvider"])
        except (OSError, ValueError, KeyError, RuntimeError, TypeError) as exc:
            raise CheckUnavailableError(f"{FEATURE}: cannot load {directory}: {exc}") from None
        self.classes = label_classes(self.labels, label_map or {}, own.get("label_map") or {}, WHERE)
        self.pad_id = _pad_id(tokenizer, config)
        tokenizer.no_truncation()
        tokenizer.no_padding()
        self.tokenizer = tokenizer
        self.prefix, self.suffix = _template(tokenizer)
        length = int(own.get("window") or _model_length(config, tok_config))
        self.body = length - len(self.prefix) - len(self.suffix)
        self.stride = int(own.get("stride") or max(1, self.body * 3 // 4))
        self.sigmoid = config.get("problem_type") == "multi_label_classification"
        self.rule = str(own.get("rule", TYPED_ATTACK))
        self.inputs = frozenset(i.name for i in self.session.get_inputs())
        self._thresholds = {
            c: float(own.get("thresholds", {}).get(c, DEFAULT_THRESHOLD)) for c in CLASS_ORDER
        }
        self._lock = threading.Lock()

    @property
    def default_thresholds(self) -> dict[str, float]:
        return {c: t for c, t in self._thresholds.items() if c != "benign"}

    def label_probs(self, windows: list[list[int]]) -> Any:
        """Each window's probability per model label (rows: windows), in batches of :data:`BATCH`."""
        import numpy as np

        out = []
        for i in range(0, len(windows), BATCH):
            rows = [[*self.prefix, *w, *self.suffix] for w in windows[i : i + BATCH]]
            width = max(len(r) for r in rows)
            ids = np.full((len(rows), width), self.pad_id, dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            for r, seq in enumerate(rows):
                ids[r, : len(seq)] = seq
                mask[r, : len(seq)] = 1
            feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            with self._lock:
                [logits] = self.session.run(None, {k: v for k, v in feeds.items() if k in self.inputs})[:1]
            out.append(_probabilities(np.asarray(logits, dtype=np.float64), self.sigmoid))
        return np.concatenate(out, axis=0)

    def score(self, text: str, *, max_windows: int, model_windows: int | None = None) -> Scores:
        """Every window is read (``model_windows`` is for the shipped model's screener and is not used)."""
        enc = self.tokenizer.encode(text, add_special_tokens=False)
        ids, offsets = enc.ids, enc.offsets
        starts = window_starts(len(ids), self.body, self.stride)
        if len(starts) > max_windows:
            raise TextTooLongError(
                f"text of {len(ids)} tokens needs {len(starts)} windows, over the limit of {max_windows} "
                "(guardrails.checks.classification.max_windows); split it or raise the limit"
            )
        windows = [ids[s : s + self.body] for s in starts]
        spans = [
            (offsets[s][0], offsets[s + len(w) - 1][1]) if w else (0, 0)
            for s, w in zip(starts, windows, strict=True)
        ]
        matrix = class_matrix(self.label_probs(windows), self.classes)
        return best_over_windows(matrix, spans, len(windows), self.rule)


def _probabilities(logits: Any, sigmoid: bool) -> Any:
    import numpy as np

    if sigmoid:
        return 1.0 / (1.0 + np.exp(-logits))
    shifted = logits - logits.max(axis=1, keepdims=True)
    e = np.exp(shifted)
    return e / e.sum(axis=1, keepdims=True)


def _template(tokenizer: Any) -> tuple[list[int], list[int]]:
    """The token ids the tokenizer's template puts before and after a single text."""
    probe = "hello world"
    plain = tokenizer.encode(probe, add_special_tokens=False).ids
    full = tokenizer.encode(probe).ids
    for i in range(len(full) - len(plain) + 1):
        if full[i : i + len(plain)] == plain:
            return list(full[:i]), list(full[i + len(plain) :])
    raise CheckUnavailableError(f"{FEATURE}: cannot find where the tokenizer's template puts the text")


def _model_length(config: dict[str, Any], tok_config: dict[str, Any]) -> int:
    declared = tok_config.get("model_max_length")
    if isinstance(declared, int) and 8 <= declared <= 100_000:
        return min(declared, MAX_WINDOW)
    positions = config.get("max_position_embeddings")
    if isinstance(positions, int) and positions > 8:
        return min(positions - POSITION_OFFSET.get(str(config.get("model_type")), 0), MAX_WINDOW)
    return MAX_WINDOW


def _pad_id(tokenizer: Any, config: dict[str, Any]) -> int:
    padding = tokenizer.padding
    if padding and isinstance(padding.get("pad_id"), int):
        return int(padding["pad_id"])
    for token in ("[PAD]", "<pad>"):
        found = tokenizer.token_to_id(token)
        if found is not None:
            return int(found)
    pad = config.get("pad_token_id")
    return int(pad) if isinstance(pad, int) else 0


@lru_cache(maxsize=4)
def load_sequence_classifier(
    directory: str, label_map: tuple[tuple[str, str], ...] = (), threads: int = 1
) -> SequenceClassifier:
    return SequenceClassifier(Path(directory).expanduser(), label_map=dict(label_map), threads=threads)
