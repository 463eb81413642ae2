"""The trained attack classifier: a fine-tuned MiniLM run by onnxruntime over windows of the whole text.

The model directory (by default the ``stockade-guardrails-model`` package's, see its README) holds:
``model.onnx`` (int8; input_ids + attention_mask -> class probabilities), ``tokenizer.json`` (WordPiece, read
with the ``tokenizers`` library), ``screener.npz`` (see screener.py), optionally ``lexical.npz`` (lexical.py: a
character n-gram view stacked on the readings of short texts) and ``classifier.json`` (labels, window and stride,
the windows the model reads per text, default thresholds). No torch, no network.

A text is tokenised once and cut into overlapping windows (windows.py). Up to ``model_windows`` windows are read
by the model; a longer text has all its windows scored by the screener and the model reads the first, the last
and the most suspicious ones. A class's score is its highest probability over the windows read, and the window
it came from is reported. A text of more than ``max_windows`` windows is not judged at all:
:class:`TextTooLongError`, which the check runner turns into a fail-closed block (or a warning when fail-open).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from stockade.guardrails.checks.classification.class_scores import (
    CLASS_PROBABILITY,
    RULES,
    window_scores,
)
from stockade.guardrails.checks.classification.head import EMBEDDING_OUTPUT, DecisionHead
from stockade.guardrails.checks.classification.lexical import LexicalModel, stack
from stockade.guardrails.checks.classification.library import (
    SENTENCE_ENDS,
    KnownAttacks,
    Match,
    sentence_vectors,
)
from stockade.guardrails.checks.classification.screener import Screener
from stockade.guardrails.checks.classification.views import views
from stockade.guardrails.checks.classification.windows import (
    char_span,
    pick_windows,
    sentence_ranges,
    sentence_spans,
    window_starts,
)
from stockade.guardrails.errors import CheckUnavailableError, GuardrailError
from stockade.guardrails.extras import require

FEATURE = "content classification (trained classifier)"
_CLS, _SEP = "[CLS]", "[SEP]"


class TextTooLongError(GuardrailError):
    """The text has more windows than the check may read per call (``max_windows``)."""


@dataclass(frozen=True)
class Scores:
    """Per class, its highest score over the windows read (see :func:`window_scores`), and the character span
    of that window."""

    probs: dict[str, float]
    spans: dict[str, tuple[int, int]]
    windows: int
    read: int
    # The attack score (``1 - P(benign)``) of each window of the text the model read, in text order, and the
    # highest over the extra readings (decoded views, a short text's sentences): the document-level decision
    # weighs a window against the rest of its document (decision.py). Empty for backends that do not give them.
    window_attack: tuple[float, ...] = ()
    extra_attack: float = 0.0
    # The best known-attack library match (library.py), when the check asked for one, and its window's span.
    library: Match | None = None
    library_span: tuple[int, int] = (0, 0)
    # A text of a few windows (``sentences.max_windows``): the most suspicious sentence of its most suspicious
    # window read alone (of the ``sentences.read`` the screener ranks highest), its kind, attack score and span;
    # the decision weighs it with a threshold of its own.
    sentence_kind: str = ""
    sentence_attack: float = 0.0
    sentence_span: tuple[int, int] = (0, 0)


def default_model_dir() -> Path:
    """The directory of the model shipped in the ``stockade-guardrails-model`` package."""
    try:
        from stockade.guardrails_model import model_dir
    except ImportError:
        raise CheckUnavailableError(
            "content classification: the trained classifier is not installed; "
            "pip install 'stockade-guardrails[ml]' (it brings stockade-guardrails-model), or set "
            "guardrails.checks.classification.classifier_path to a model directory, or method: routes"
        ) from None
    return Path(model_dir())


class AttackClassifier:
    """Loads once per directory and process (see :func:`load`); ``score`` is thread-safe."""

    def __init__(self, directory: Path, *, threads: int = 1) -> None:
        ort = require("onnxruntime", extra="ml", feature=FEATURE)
        tokenizers = require("tokenizers", extra="ml", feature=FEATURE)
        require("numpy", extra="ml", feature=FEATURE)
        try:
            self.meta: dict[str, Any] = json.loads(
                (directory / "classifier.json").read_text(encoding="utf-8")
            )
            tokenizer = tokenizers.Tokenizer.from_file(str(directory / "tokenizer.json"))
            self.screener = Screener.load(directory / "screener.npz")
            options = ort.SessionOptions()
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
            self.session = ort.InferenceSession(
                str(directory / "model.onnx"), options, providers=["CPUExecutionProvider"]
            )
            outputs = {o.name for o in self.session.get_outputs()}
            head = DecisionHead.load(directory / "head.npz")
            self.has_hidden = EMBEDDING_OUTPUT in outputs
            self.head = head if self.has_hidden else None
            # the lexical view (lexical.py), stacked on each row's attack score when the directory ships one
            lexical = directory / "lexical.npz"
            self.lexical = LexicalModel.load(lexical) if lexical.exists() else None
            lexical_meta = self.meta.get("lexical") or {}
            self.lexical_weight = float(lexical_meta.get("weight", 0.0))
            # texts of up to this many windows: beyond it the documents are read by the encoder alone
            self.lexical_max_windows = int(lexical_meta.get("max_windows", 1))
            self.library: KnownAttacks | None = None  # loaded on first use (library=True): most never ask
            self._library_dir = directory if self.has_hidden else None
        except (OSError, ValueError, KeyError, RuntimeError) as exc:
            raise CheckUnavailableError(f"{FEATURE}: cannot load {directory}: {exc}") from None
        tokenizer.no_truncation()
        tokenizer.no_padding()
        self.tokenizer = tokenizer
        self.labels: list[str] = list(self.meta["labels"])
        self.window = int(self.meta["window"])
        self.stride = int(self.meta["stride"])
        self.model_windows = int(self.meta["model_windows"])
        # texts of 2 to this many windows also have the sentences of their most suspicious window read alone
        sentences = self.meta.get("sentences") or {}
        self.sentence_max_windows = int(sentences.get("max_windows", 1))
        # at most this many of that window's sentences, the screener's most suspicious (0: all of them)
        self.sentence_read = int(sentences.get("read", 0))
        self.rule = str(self.meta.get("rule", CLASS_PROBABILITY))
        if self.rule not in RULES:
            raise CheckUnavailableError(f"{FEATURE}: {directory} has an unknown rule {self.rule!r}")
        self.end_ids = {i for i in (tokenizer.token_to_id(t) for t in SENTENCE_ENDS) if i is not None}
        self.cls_id = tokenizer.token_to_id(_CLS)
        self.sep_id = tokenizer.token_to_id(_SEP)
        self._lock = threading.Lock()

    @property
    def default_thresholds(self) -> dict[str, float]:
        return {k: float(v) for k, v in self.meta["thresholds"].items()}

    def score(
        self, text: str, *, max_windows: int, model_windows: int | None = None, library: bool = False
    ) -> Scores:
        """The text's scores; with ``library`` (and a model directory that has one, library.py) also its best
        match in the known-attack library."""
        rows, spans, n_windows, n_read, texts = self._rows(text, max_windows, model_windows)
        if library and self.library is None and self._library_dir is not None:
            with self._lock:
                if self.library is None and self._library_dir is not None:
                    self.library = KnownAttacks.load(self._library_dir)
                    self._library_dir = None  # looked once: a directory without the file has no library
        use_library = library and self.library is not None
        probs, hidden, ids, mask = self._forward(rows, hidden=use_library)
        if self.lexical is not None and self.lexical_weight and n_windows <= self.lexical_max_windows:
            probs = stack(self.lexical, self.lexical_weight, probs, texts, self.labels.index("benign"))
        probs = window_scores(probs, self.labels, self.rule)
        best = probs.argmax(axis=0)
        out = {label: float(probs[int(best[k]), k]) for k, label in enumerate(self.labels)}
        where = {label: spans[int(best[k])] for k, label in enumerate(self.labels)}
        attack = 1.0 - probs[:, self.labels.index("benign")]
        extra = float(attack[n_read:].max()) if len(rows) > n_read else 0.0
        sentence = ("", 0.0, (0, 0))
        if 1 < n_windows <= self.sentence_max_windows:
            sentence = self._top_sentence(text, attack[:n_read], spans)
        match, match_span = None, (0, 0)
        if use_library and self.library is not None:
            vecs, owner = sentence_vectors(hidden, ids, mask, self.end_ids)
            match = self.library.match(vecs, owner)
            match_span = spans[match.row] if match is not None else (0, 0)
        return Scores(
            out,
            where,
            n_windows,
            n_read,
            tuple(float(a) for a in attack[:n_read]),
            extra,
            match,
            match_span,
            *sentence,
        )

    def _rows(
        self, text: str, max_windows: int, model_windows: int | None
    ) -> tuple[list[list[int]], list[tuple[int, int]], int, int, list[str]]:
        """The token rows the model reads (the windows read, then decoded views and a short text's sentences),
        each row's character span, the text's window count, how many of its windows are read, and each row's
        text (its span of the text, or the decoded view it reads)."""
        enc = self.tokenizer.encode(text, add_special_tokens=False)
        ids, offsets = enc.ids, enc.offsets
        body = self.window - 2
        starts = window_starts(len(ids), body, self.stride)
        if len(starts) > max_windows:
            raise TextTooLongError(
                f"text of {len(ids)} tokens needs {len(starts)} windows, over the limit of {max_windows} "
                "(guardrails.checks.classification.max_windows); split it or raise the limit"
            )
        windows = [ids[s : s + body] for s in starts]
        budget = model_windows or self.model_windows
        chosen = (
            list(range(len(windows)))
            if len(windows) <= budget
            else pick_windows(self.screener.attack_scores(windows), budget)
        )
        rows = [windows[i] for i in chosen]
        spans = [char_span(offsets, starts[i], len(windows[i])) for i in chosen]
        texts = [text[a:b] for a, b in spans]
        for view in views(text, self._token_count):  # decoded readings (views.py): their span is the text's
            view_enc = self.tokenizer.encode(view, add_special_tokens=False)
            for s in window_starts(len(view_enc.ids), body, self.stride)[:4]:
                rows.append(view_enc.ids[s : s + body])
                a, b = char_span(view_enc.offsets, s, len(rows[-1]))
                texts.append(view[a:b])
            spans.extend([(0, len(text))] * (len(rows) - len(spans)))
        if len(windows) == 1:  # a short text: each of its sentences is read alone too (sentence_spans)
            for start, end in sentence_spans(enc.tokens):
                rows.append(ids[start:end])
                spans.append((offsets[start][0], offsets[end - 1][1]))
                texts.append(text[spans[-1][0] : spans[-1][1]])
        return rows, spans, len(windows), len(chosen), texts

    def sentence_vectors(self, text: str, *, max_windows: int) -> tuple[Any, list[tuple[int, int]]]:
        """The library's view of a text: unit vectors of the sentences in the rows the model reads, and the
        character span of each vector's row (for measuring and building the library, bench/known_attacks.py)."""
        rows, spans, _, _, _ = self._rows(text, max_windows, None)
        _, hidden, ids, mask = self._forward(rows, hidden=True)
        vecs, owner = sentence_vectors(hidden, ids, mask, self.end_ids)
        return vecs, [spans[int(r)] for r in owner]

    def _top_sentence(
        self, text: str, window_attack: Any, spans: list[tuple[int, int]]
    ) -> tuple[str, float, tuple[int, int]]:
        """The most suspicious window's most suspicious sentence read alone: its kind, attack score and span."""
        import numpy as np

        a, b = spans[int(np.argmax(window_attack))]
        enc = self.tokenizer.encode(text[a:b], add_special_tokens=False)
        ranges = sentence_ranges(text[a:b], enc.tokens, enc.offsets, self.window - 2, self.stride)
        if len(ranges) < 2:
            return "", 0.0, (0, 0)
        rows = [enc.ids[s:e] for s, e in ranges]
        if 0 < self.sentence_read < len(rows):  # the encoder reads the screener's top ones (its cost)
            rank = -np.asarray(self.screener.attack_scores(rows))
            keep = sorted(np.argsort(rank, kind="stable")[: self.sentence_read])
            ranges, rows = [ranges[i] for i in keep], [rows[i] for i in keep]
        probs, *_ = self._forward(rows)
        probs = window_scores(probs, self.labels, self.rule)
        benign = self.labels.index("benign")
        row = int(np.argmin(probs[:, benign]))
        kind = max((k for k in range(len(self.labels)) if k != benign), key=lambda k: probs[row, k])
        s, e = ranges[row]
        return (
            self.labels[kind],
            1.0 - float(probs[row, benign]),
            (a + enc.offsets[s][0], a + enc.offsets[e - 1][1]),
        )

    def _token_count(self, text: str) -> int:
        return len(self.tokenizer.encode(text, add_special_tokens=False).ids)

    def _forward(self, rows: list[list[int]], *, hidden: bool = False) -> tuple[Any, Any, Any, Any]:
        """Class probabilities per row (through the decision head when the model directory has one), and with
        ``hidden`` the fifth-layer states, input ids and mask (None without)."""
        import numpy as np

        width = max(len(r) for r in rows) + 2
        input_ids = np.zeros((len(rows), width), dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for row, window in enumerate(rows):
            seq = [self.cls_id, *window, self.sep_id]
            input_ids[row, : len(seq)] = seq
            mask[row, : len(seq)] = 1
        want = self.head is not None or (hidden and self.has_hidden)
        names = ["probs", EMBEDDING_OUTPUT] if want else ["probs"]
        with self._lock:  # one run at a time per session: intra-op threads are the parallelism
            outputs = self.session.run(names, {"input_ids": input_ids, "attention_mask": mask})
        probs = outputs[0] if self.head is None else self.head.apply(outputs[0], outputs[1], mask)
        if not (hidden and want):
            return probs, None, None, None
        return probs, outputs[1], input_ids, mask


@lru_cache(maxsize=4)
def load(directory: str, threads: int = 1) -> AttackClassifier:
    return AttackClassifier(Path(directory), threads=threads)
