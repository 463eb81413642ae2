"""The shipped classifier: TF-IDF over word and character n-grams, then a multinomial logistic regression.

The artefact is a directory of plain files, read without unpickling anything:

| file | content |
|---|---|
| ``card.json`` | labels (class order), featurizer version, training parameters, data hash, held-out metrics |
| ``vocabulary.json`` | ``{"word": [...], "char": [...]}``: each block's terms in column order |
| ``weights.npz`` | ``word_idf``, ``char_idf``, ``coef`` (classes x columns, word block first), ``intercept`` |

Prediction is scikit-learn's ``TfidfVectorizer(sublinear_tf=True)`` per block (``1 + ln(tf)`` times idf,
L2-normalised), the blocks side by side, then ``softmax(coef @ x + intercept)``: the same probabilities as
``LogisticRegression.predict_proba`` on the fitted pipeline (a test compares them).
"""

from __future__ import annotations

import io
import json
import zipfile
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from stockade.toxicity_classifier.features import FEATURIZER_VERSION, char_terms, normalize, word_terms

DEFAULT_MODEL_DIR = Path(__file__).resolve().parent / "model"
BLOCKS: dict[str, Callable[[str], list[str]]] = {"word": word_terms, "char": char_terms}

Floats = npt.NDArray[np.float64]


class ModelLoadError(RuntimeError):
    """The artefact directory is missing, incomplete or inconsistent."""


@dataclass(frozen=True)
class Block:
    """One TF-IDF block: its terms' column numbers (relative to ``offset``) and their idf weights."""

    name: str
    index: dict[str, int]
    idf: Floats
    offset: int

    def vector(self, normalized: str) -> tuple[npt.NDArray[np.intp], Floats]:
        """Columns and L2-normalised sublinear TF-IDF values of the block's known terms in the text."""
        counts = Counter(t for t in BLOCKS[self.name](normalized) if t in self.index)
        if not counts:
            return np.empty(0, dtype=np.intp), np.empty(0)
        cols = np.fromiter((self.index[t] for t in counts), dtype=np.intp, count=len(counts))
        tf = np.fromiter(counts.values(), dtype=np.float64, count=len(counts))
        values = (1.0 + np.log(tf)) * self.idf[cols]
        return cols + self.offset, values / np.linalg.norm(values)


class ToxicityModel:
    """Loaded once per process; :meth:`predict_proba` is thread-safe (read-only state)."""

    def __init__(
        self,
        labels: Sequence[str],
        blocks: Sequence[Block],
        coef: Floats,
        intercept: Floats,
        card: dict[str, Any],
    ) -> None:
        columns = sum(len(b.index) for b in blocks)
        if coef.shape != (len(labels), columns) or intercept.shape != (len(labels),):
            raise ModelLoadError(
                f"weights do not fit: coef {coef.shape}, intercept {intercept.shape}, "
                f"{len(labels)} labels, {columns} terms"
            )
        self.labels = tuple(labels)
        self.blocks = tuple(blocks)
        self.coef = coef
        self.intercept = intercept
        self.card = card

    @classmethod
    def load(cls, directory: Path = DEFAULT_MODEL_DIR) -> ToxicityModel:
        try:
            card = json.loads((directory / "card.json").read_text(encoding="utf-8"))
            vocabulary = json.loads((directory / "vocabulary.json").read_text(encoding="utf-8"))
            with np.load(directory / "weights.npz", allow_pickle=False) as weights:
                arrays = {name: weights[name].astype(np.float64) for name in weights.files}
        except (OSError, ValueError) as exc:
            raise ModelLoadError(f"cannot read the model in {directory}: {exc}") from exc
        if card.get("featurizer") != FEATURIZER_VERSION:
            raise ModelLoadError(
                f"model in {directory} was trained with featurizer {card.get('featurizer')!r}, "
                f"this code has {FEATURIZER_VERSION!r}: retrain it"
            )
        blocks, offset = [], 0
        try:
            for name in BLOCKS:
                terms = vocabulary[name]
                blocks.append(Block(name, {t: i for i, t in enumerate(terms)}, arrays[f"{name}_idf"], offset))
                offset += len(terms)
            return cls(card["labels"], blocks, arrays["coef"], arrays["intercept"], card)
        except KeyError as exc:
            raise ModelLoadError(f"model in {directory} lacks {exc}") from exc

    def save(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        card = {**self.card, "labels": list(self.labels), "featurizer": FEATURIZER_VERSION}
        (directory / "card.json").write_text(json.dumps(card, indent=2) + "\n", encoding="utf-8")
        vocabulary = {b.name: sorted(b.index, key=b.index.__getitem__) for b in self.blocks}
        (directory / "vocabulary.json").write_text(
            json.dumps(vocabulary, ensure_ascii=False, separators=(",", ":")) + "\n", encoding="utf-8"
        )
        arrays = {f"{b.name}_idf": b.idf for b in self.blocks}
        _write_npz(directory / "weights.npz", {"coef": self.coef, "intercept": self.intercept, **arrays})

    def predict_proba(self, texts: Sequence[str]) -> Floats:
        """Class probabilities, one row per text, columns in :attr:`labels` order; rows sum to 1."""
        out = np.empty((len(texts), len(self.labels)))
        for row, text in enumerate(texts):
            normalized = normalize(text)
            logits = self.intercept.copy()
            for block in self.blocks:
                cols, values = block.vector(normalized)
                if cols.size:
                    logits += self.coef[:, cols] @ values
            exp = np.exp(logits - logits.max())
            out[row] = exp / exp.sum()
        return out

    def classify(self, texts: Sequence[str]) -> list[list[tuple[str, float]]]:
        """Per text, every label with its probability, most likely first."""
        result = []
        for probs in self.predict_proba(texts):
            order = np.argsort(-probs, kind="stable")
            result.append([(self.labels[i], float(probs[i])) for i in order])
        return result


def _write_npz(path: Path, arrays: dict[str, Floats]) -> None:
    """``np.savez_compressed`` as float32, with fixed member time stamps: retraining on the same data writes
    the same bytes (numpy stamps each member with the current time)."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, array in arrays.items():
            buffer = io.BytesIO()
            np.lib.format.write_array(
                buffer, np.ascontiguousarray(array, dtype=np.float32), allow_pickle=False
            )
            member = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            member.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(member, buffer.getvalue())
