"""A sentence-transformers model run by onnxruntime (same vectors as torch, several times less overhead per call).

The model's transformer is exported to ONNX (fp32) with ``torch.onnx`` on first use and cached on disk under
``cache_dir`` (default ``$STOCKADE_ONNX_CACHE`` or ``~/.cache/stockade/onnx``), keyed by the model files, so
later processes load the cached file without torch. Tokenisation uses the model's ``tokenizer.json`` with the
``tokenizers`` library; pooling is the model's mean pooling followed by L2 normalisation. Only models whose
sentence-transformers modules are Transformer + mean Pooling (+ Normalize) are supported (all-MiniLM-L6-v2 is);
:func:`onnx_supported` says whether a directory qualifies.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import tempfile
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any

from stockade.guardrails.errors import CheckUnavailableError
from stockade.guardrails.extras import require

FEATURE = "content classification (ONNX encoder)"
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
_MODULES = {
    "sentence_transformers.models.Transformer",
    "sentence_transformers.models.Pooling",
    "sentence_transformers.models.Normalize",
}


def default_cache_dir() -> Path:
    env = os.environ.get("STOCKADE_ONNX_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "stockade" / "onnx"


def onnx_supported(model_dir: str) -> bool:
    """True when the directory is a Transformer + mean-pooling sentence-transformers model with a tokenizer.json."""
    root = Path(model_dir)
    try:
        modules = json.loads((root / "modules.json").read_text(encoding="utf-8"))
        types = {m["type"] for m in modules}
        pooling_dir = next(m["path"] for m in modules if m["type"].endswith(".Pooling"))
        pooling = json.loads((root / pooling_dir / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, KeyError, StopIteration):
        return False
    modes = {k for k, v in pooling.items() if k.startswith("pooling_mode") and v}
    return types <= _MODULES and modes == {"pooling_mode_mean_tokens"} and (root / "tokenizer.json").exists()


class OnnxSentenceEncoder:
    """Mean-pooled, L2-normalised sentence embeddings from an ONNX export of a sentence-transformers model."""

    def __init__(
        self,
        path: str,
        *,
        max_seq_length: int = 128,
        threads: int = 1,
        cache_dir: str | Path | None = None,
        int8: bool = False,
    ) -> None:
        """``int8``: run a dynamically int8-quantised copy of the export (faster on CPU; the vectors differ from
        the fp32 model's, cosine about 0.96-0.99, so routes must be fitted with the same setting)."""
        require("onnxruntime", extra="ml", feature=FEATURE)
        require("tokenizers", extra="ml", feature=FEATURE)
        self.path, self.max_seq_length, self.threads = path, max_seq_length, threads
        self.cache_dir = Path(cache_dir) if cache_dir else default_cache_dir()
        self.int8 = int8

    async def encode(self, texts: list[str]) -> list[list[float]]:
        return await asyncio.to_thread(self.encode_sync, texts)

    def encode_sync(self, texts: list[str], batch_size: int = 32) -> list[list[float]]:
        out: list[list[float]] = []
        for i in range(0, len(texts), batch_size):
            out.extend(self.encode_array(texts[i : i + batch_size]).tolist())
        return out

    def encode_array(self, texts: list[str]) -> Any:
        """One batch as a float32 numpy array (rows L2-normalised)."""
        np = require("numpy", extra="ml", feature=FEATURE)
        session, tokenizer, wanted = _load(
            self.path, self.max_seq_length, self.threads, str(self.cache_dir), self.int8
        )
        encodings = tokenizer.encode_batch(texts)
        ids = np.asarray([e.ids for e in encodings], dtype=np.int64)
        mask = np.asarray([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        [hidden] = session.run(["last_hidden_state"], {k: v for k, v in feeds.items() if k in wanted})
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return pooled / np.clip(norms, 1e-12, None)


@lru_cache(maxsize=4)
def _load(
    path: str, max_seq_length: int, threads: int, cache_dir: str, int8: bool = False
) -> tuple[Any, Any, frozenset[str]]:
    ort = require("onnxruntime", extra="ml", feature=FEATURE)
    tokenizers = require("tokenizers", extra="ml", feature=FEATURE)
    onnx_file = quantized_model(path, Path(cache_dir)) if int8 else exported_model(path, Path(cache_dir))
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(str(onnx_file), options, providers=["CPUExecutionProvider"])
    tokenizer = tokenizers.Tokenizer.from_file(str(Path(path) / "tokenizer.json"))
    tokenizer.enable_truncation(max_length=max_seq_length)
    tokenizer.enable_padding()
    wanted = frozenset(i.name for i in session.get_inputs())
    return session, tokenizer, wanted


_EXPORT_LOCK = threading.Lock()


def exported_model(path: str, cache_dir: Path) -> Path:
    """The cached ONNX file for the model at ``path``, exporting it with torch first if it is not there yet."""
    target = cached_export(path, cache_dir)
    if target.exists():
        return target
    with _EXPORT_LOCK:
        if not target.exists():
            _export(path, target)
    return target


def quantized_model(path: str, cache_dir: Path) -> Path:
    """The cached int8 copy of the export (onnxruntime's dynamic quantisation of the MatMul weights)."""
    target = cached_export(path, cache_dir).with_name("model.int8.onnx")
    if target.exists():
        return target
    source = exported_model(path, cache_dir)
    with _EXPORT_LOCK:
        if not target.exists():
            quantization = require("onnxruntime.quantization", extra="ml", feature=f"{FEATURE}: int8")
            fd, tmp = tempfile.mkstemp(suffix=".onnx", dir=target.parent)
            os.close(fd)
            try:
                quantization.quantize_dynamic(str(source), tmp, weight_type=quantization.QuantType.QInt8)
                os.chmod(tmp, 0o644)
                os.replace(tmp, target)
            except Exception as exc:
                Path(tmp).unlink(missing_ok=True)
                raise CheckUnavailableError(f"int8 quantisation of {source} failed: {exc}") from exc
    return target


def cached_export(path: str, cache_dir: Path) -> Path:
    """Where the ONNX export of the model at ``path`` lives (it may not exist yet)."""
    return cache_dir / _model_key(path) / "model.onnx"


def _model_key(path: str) -> str:
    """Changes when the model's weights or config change (name, size and mtime of each file)."""
    digest = hashlib.sha256()
    for f in sorted(Path(path).rglob("*")):
        if f.is_file():
            st = f.stat()
            digest.update(f"{f.relative_to(path)}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return f"{Path(path).name}-{digest.hexdigest()[:16]}"


def _export(path: str, target: Path) -> None:
    torch = require("torch", extra="torch", feature=f"{FEATURE}: first-use export")
    require("onnx", extra="torch", feature=f"{FEATURE}: first-use export")
    transformers = require("transformers", extra="torch", feature=f"{FEATURE}: first-use export")
    tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    model = transformers.AutoModel.from_pretrained(path).eval()
    sample = tokenizer(["an example sentence"], return_tensors="pt")
    names = [n for n in _INPUTS if n in sample]
    axes = {n: {0: "batch", 1: "tokens"} for n in [*names, "last_hidden_state"]}
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(suffix=".onnx", dir=target.parent)
    os.close(fd)
    try:
        with torch.no_grad():
            torch.onnx.export(
                model,
                tuple(sample[n] for n in names),
                tmp,
                input_names=names,
                output_names=["last_hidden_state"],
                dynamic_axes=axes,
                opset_version=17,
                dynamo=False,
            )
        os.chmod(tmp, 0o644)  # mkstemp makes it private; the cache may be shared
        os.replace(tmp, target)  # atomic: another process sees the whole file or none
    except Exception as exc:
        Path(tmp).unlink(missing_ok=True)
        raise CheckUnavailableError(f"ONNX export of {path} failed: {exc}") from exc
