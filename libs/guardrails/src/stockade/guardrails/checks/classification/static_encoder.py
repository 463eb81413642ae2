"""Static token embeddings distilled from a local sentence encoder: the prefilter's encoder.

Every token of the model's vocabulary is run once through the model (``[CLS] token [SEP]``, mean-pooled, the
distillation model2vec popularised); a text's vector is then the L2-normalised mean of its tokens' vectors. No
attention runs per text, so a 1 kB text costs well under a millisecond and there is no length limit. It is
much less precise than the model itself, which is why it only decides the clear cases (see ``prefilter.py``).

The table is distilled on first use with onnxruntime from the same cached ONNX export the full encoder uses
(about 15 s for MiniLM's 30,522 tokens on two cores) and cached beside it as ``static.npy`` (float16).
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any

from stockade.guardrails.checks.classification.onnx_encoder import cached_export, exported_model
from stockade.guardrails.errors import CheckUnavailableError
from stockade.guardrails.extras import require

FEATURE = "content classification (static prefilter)"
_BATCH = 512
_LOCK = threading.Lock()


class StaticEncoder:
    """Mean of distilled token vectors, L2-normalised (same interface as the other encoders)."""

    def __init__(self, path: str, *, cache_dir: str | Path) -> None:
        require("numpy", extra="ml", feature=FEATURE)
        require("onnxruntime", extra="ml", feature=FEATURE)
        require("tokenizers", extra="ml", feature=FEATURE)
        self.path, self.cache_dir = path, Path(cache_dir)

    @property
    def fingerprint(self) -> str:
        return f"static:{cached_export(self.path, self.cache_dir).parent.name}"

    async def encode(self, texts: list[str]) -> list[list[float]]:
        return await asyncio.to_thread(self.encode_sync, texts)

    def encode_sync(self, texts: list[str]) -> list[list[float]]:
        out: list[list[float]] = self.encode_array(texts).tolist()
        return out

    def encode_array(self, texts: list[str]) -> Any:
        np = require("numpy", extra="ml", feature=FEATURE)
        table, tokenizer = _load(self.path, str(self.cache_dir))
        rows = np.zeros((len(texts), table.shape[1]), dtype=np.float32)
        for i, encoding in enumerate(tokenizer.encode_batch(texts, add_special_tokens=False)):
            if encoding.ids:
                rows[i] = table[encoding.ids].mean(axis=0)
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        return rows / np.clip(norms, 1e-12, None)


def table_path(path: str, cache_dir: Path) -> Path:
    return cached_export(path, cache_dir).parent / "static.npy"


@lru_cache(maxsize=4)
def _load(path: str, cache_dir: str) -> tuple[Any, Any]:
    np = require("numpy", extra="ml", feature=FEATURE)
    tokenizers = require("tokenizers", extra="ml", feature=FEATURE)
    target = table_path(path, Path(cache_dir))
    if not target.exists():
        with _LOCK:
            if not target.exists():
                _distill(path, Path(cache_dir), target)
    table = np.load(target).astype(np.float32)
    tokenizer = tokenizers.Tokenizer.from_file(str(Path(path) / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return table, tokenizer


def _distill(path: str, cache_dir: Path, target: Path) -> None:
    """One forward pass per vocabulary token (batched), mean-pooled over ``[CLS] token [SEP]``."""
    np = require("numpy", extra="ml", feature=FEATURE)
    ort = require("onnxruntime", extra="ml", feature=FEATURE)
    tokenizers = require("tokenizers", extra="ml", feature=FEATURE)
    options = ort.SessionOptions()
    options.intra_op_num_threads = os.cpu_count() or 1
    session = ort.InferenceSession(
        str(exported_model(path, cache_dir)), options, providers=["CPUExecutionProvider"]
    )
    wanted = {i.name for i in session.get_inputs()}
    vocab = tokenizers.Tokenizer.from_file(str(Path(path) / "tokenizer.json")).get_vocab()
    try:
        cls_id, sep_id = vocab["[CLS]"], vocab["[SEP]"]
    except KeyError as exc:
        raise CheckUnavailableError(
            f"{path}: no {exc} token; the static prefilter needs a BERT vocabulary"
        ) from None
    size = max(vocab.values()) + 1
    table = None
    for start in range(0, size, _BATCH):
        ids = np.arange(start, min(size, start + _BATCH), dtype=np.int64)
        tokens = np.stack([np.full_like(ids, cls_id), ids, np.full_like(ids, sep_id)], axis=1)
        feeds = {
            "input_ids": tokens,
            "attention_mask": np.ones_like(tokens),
            "token_type_ids": np.zeros_like(tokens),
        }
        [hidden] = session.run(["last_hidden_state"], {k: v for k, v in feeds.items() if k in wanted})
        if table is None:
            table = np.zeros((size, hidden.shape[-1]), dtype=np.float32)
        table[start : start + len(ids)] = hidden.mean(axis=1)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(suffix=".npy", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            np.save(fh, np.asarray(table, dtype=np.float16))
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)  # atomic: another process sees the whole table or none
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
