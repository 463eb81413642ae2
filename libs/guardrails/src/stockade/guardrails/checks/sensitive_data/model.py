"""Loads a token-classification pipeline (local directory or hub name) once per process and runs it over
overlapping windows of long texts."""

from __future__ import annotations

import logging
import threading
from functools import lru_cache
from typing import Any

from stockade.guardrails.checks.sensitive_data.chunking import Entity, merge_entities, token_windows
from stockade.guardrails.extras import require

FEATURE = "sensitive-data detection"
BATCH_WINDOWS = 8  # windows per model call; a cancelled detect() stops between batches
log = logging.getLogger(__name__)


class TokenClassifier:
    def __init__(
        self, model: str, *, device: str = "cpu", chunk_tokens: int = 256, overlap_tokens: int = 32
    ) -> None:
        require("transformers", extra="torch", feature=FEATURE)
        require("torch", extra="torch", feature=FEATURE)
        self.model, self.device = model, device
        self.chunk_tokens, self.overlap_tokens = chunk_tokens, overlap_tokens

    def load(self) -> Any:
        pipe, _ = _pipeline(self.model, self.device)
        return pipe

    def detect(self, text: str, stop: threading.Event | None = None) -> list[Entity]:
        """Entities of ``text``; with ``stop`` set midway it returns early (its caller has given up)."""
        pipe, lock = _pipeline(self.model, self.device)
        tokenizer = pipe.tokenizer
        limit = int(getattr(tokenizer, "model_max_length", 512) or 512)
        chunk = min(self.chunk_tokens, max(8, limit - 2))  # room for [CLS]/[SEP]
        overlap = min(self.overlap_tokens, chunk // 2)
        outputs: list[Any] = []
        # One thread at a time uses the pipeline, its tokenizer included (a fast tokenizer used from two
        # threads at once fails with "Already borrowed").
        with lock:
            enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
            offsets = [tuple(o) for o in enc["offset_mapping"] if o[1] > o[0]]
            windows = token_windows(offsets, chunk, overlap)
            for i in range(0, len(windows), BATCH_WINDOWS):
                if stop is not None and stop.is_set():
                    return []
                batch = [text[a:b] for a, b in windows[i : i + BATCH_WINDOWS]]
                outputs.extend(pipe(batch, batch_size=BATCH_WINDOWS))
        found = []
        for (base, _), ents in zip(windows, outputs, strict=True):
            for e in ents:
                label = (
                    str(e.get("entity_group") or e.get("entity", "")).removeprefix("B-").removeprefix("I-")
                )
                if label and label != "O":
                    found.append(
                        Entity(base + int(e["start"]), base + int(e["end"]), label, float(e["score"]))
                    )
        return merge_entities(text, found)


@lru_cache(maxsize=4)
def _pipeline(model: str, device: str) -> tuple[Any, threading.Lock]:
    transformers = require("transformers", extra="torch", feature=FEATURE)
    pipe = transformers.pipeline(
        "token-classification", model=model, tokenizer=model, aggregation_strategy="simple", device=device
    )
    return pipe, threading.Lock()
