"""The known-attack library: attack sentences of public sources, matched by nearest neighbour (off by default).

The library is the attack sentences of every source the classifier may be trained on (licences in
``bench/data/classifier/README.md`` and the shared data's README), deduplicated and embedded once at build time
(``bench/known_attacks.py --write``) with the classifier's own fifth-layer vectors, the ones its decision head
already reads (head.py). At check time the sentences inside the windows the model reads are pooled from the
same forward pass, so a lookup costs a matrix product and no second encoder. A sentence whose cosine
similarity to a library entry reaches the calibrated threshold flags the text, and the finding names the
matched entry's source.

It is off by default (``library: true`` turns it on) because, measured across sources (each source's attacks
meeting only the other sources' entries), it did not add recall at the same false-positive budget: README,
"Known-attack library".

``library.npz`` in the model directory: ``vectors`` (entries x 384, int8, scaled by 127), ``source`` and
``label`` (per entry, an index into ``sources`` and ``labels``), ``sources``, ``labels``, ``threshold`` (the
calibrated similarity).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

LIBRARY_FILE = "library.npz"
SENTENCE_ENDS = (".", "!", "?")
MIN_TOKENS = 4


@dataclass(frozen=True)
class Match:
    """The best library match of a text: similarity, the entry's source and label, the row it came from, and
    the library's calibrated threshold."""

    similarity: float
    source: str
    label: str
    row: int
    threshold: float


class KnownAttacks:
    def __init__(
        self, vectors: Any, source: Any, label: Any, sources: list[str], labels: list[str], threshold: float
    ):
        import numpy as np

        v = np.asarray(vectors, dtype=np.float32)
        self.vectors = v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-9)
        self.source = np.asarray(source)
        self.label = np.asarray(label)
        self.sources, self.labels, self.threshold = sources, labels, float(threshold)

    @classmethod
    def load(cls, directory: Path) -> KnownAttacks | None:
        """The library in ``directory``, or None when the model directory has none."""
        import numpy as np

        path = directory / LIBRARY_FILE
        if not path.exists():
            return None
        with np.load(path) as d:
            return cls(
                d["vectors"].astype(np.float32) / 127.0,
                d["source"],
                d["label"],
                [str(s) for s in d["sources"]],
                [str(s) for s in d["labels"]],
                float(d["threshold"]),
            )

    def match(self, vectors: Any, rows: Any) -> Match | None:
        """The best match of any of ``vectors`` (unit length; ``rows[i]`` is the window row of vector i)."""
        if len(vectors) == 0:
            return None
        sims = vectors @ self.vectors.T
        i, j = divmod(int(sims.argmax()), sims.shape[1])
        return Match(
            float(sims[i, j]),
            self.sources[int(self.source[j])],
            self.labels[int(self.label[j])],
            int(rows[i]),
            self.threshold,
        )


def save(
    path: Path,
    vectors: Any,
    sources: list[str],
    labels: list[str],
    entry_source: list[str],
    entry_label: list[str],
    threshold: float,
) -> None:
    """Write a library file (int8 vectors) from unit-length ``vectors`` and each entry's source and label."""
    import numpy as np

    v = np.asarray(vectors, dtype=np.float32)
    v /= np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-9)
    np.savez_compressed(
        path,
        vectors=np.round(v * 127).astype(np.int8),
        source=np.array([sources.index(s) for s in entry_source], dtype=np.int16),
        label=np.array([labels.index(lbl) for lbl in entry_label], dtype=np.int8),
        sources=np.array(sources),
        labels=np.array(labels),
        threshold=np.float32(threshold),
    )


def sentence_vectors(hidden: Any, input_ids: Any, mask: Any, end_ids: set[int]) -> tuple[Any, Any]:
    """Unit-length mean vectors of the sentences inside each window row (``hidden``: rows x tokens x width,
    ``input_ids`` with ``[CLS]`` first), cut after each sentence-ending token; pieces under MIN_TOKENS tokens
    join the next. A row without a sentence end is one piece. Returns (vectors, row of each vector)."""
    import numpy as np

    vecs, rows = [], []
    for r in range(hidden.shape[0]):
        n = int(mask[r].sum())
        start = 1  # after [CLS]; the last real token is [SEP]
        for t in range(1, n - 1):
            if int(input_ids[r, t]) in end_ids and t + 1 - start >= MIN_TOKENS:
                vecs.append(hidden[r, start : t + 1].mean(axis=0))
                rows.append(r)
                start = t + 1
        if n - 1 - start >= MIN_TOKENS or start == 1:
            vecs.append(hidden[r, start : max(start + 1, n - 1)].mean(axis=0))
            rows.append(r)
    if not vecs:
        return np.zeros((0, hidden.shape[2]), np.float32), np.zeros(0, np.int64)
    v = np.asarray(vecs, dtype=np.float32)
    return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-9), np.asarray(rows)
