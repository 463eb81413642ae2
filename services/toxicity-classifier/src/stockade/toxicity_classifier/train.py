"""Train the shipped model on Davidson et al. (2017) and report it on a held-out split.

    python -m stockade.toxicity_classifier.train [--data ../shared/data/toxicity] [--out DIR]

What Davidson et al. did, with scikit-learn: TF-IDF features, a logistic regression with balanced class
weights. Here: word 1-3-grams and character 2-5-grams (``features.py``), a multinomial logistic regression,
its C chosen by stratified 5-fold cross-validation on the training part only. Deterministic: a fixed seed for
the stratified split and the folds, and scikit-learn's lbfgs solver (no randomness). The held-out 10 % is
never seen before the final report, which is computed with the exported artefact the service loads.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeAlias

import numpy as np
import numpy.typing as npt
from scipy.sparse import csr_matrix, hstack
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import f1_score
from sklearn.model_selection import StratifiedKFold, train_test_split

from stockade.toxicity_classifier.features import char_terms, normalize, word_terms
from stockade.toxicity_classifier.model import DEFAULT_MODEL_DIR, Block, ToxicityModel
from stockade.toxicity_classifier.report import evaluate, format_report

LABELS = ("toxic", "offensive", "non-toxic")  # Davidson's class 0 hate speech, 1 offensive, 2 neither
DEFAULT_DATA = Path("../shared/data/toxicity/labeled_data.csv")
Labels = npt.NDArray[np.int64]
Matrix: TypeAlias = csr_matrix


@dataclass(frozen=True)
class TrainParams:
    seed: int = 42
    test_size: float = 0.1  # the size of the replication notebook's held-out set (2,479 tweets)
    c_grid: tuple[float, ...] = (1.0, 3.0, 10.0)
    folds: int = 5
    word_max_features: int = 20_000
    char_max_features: int = 40_000
    word_min_df: int = 2
    char_min_df: int = 3
    max_iter: int = 3000


def load_davidson(path: Path) -> tuple[list[str], Labels, str]:
    """Tweets, their classes (0 hate, 1 offensive, 2 neither) and the file's SHA-256."""
    if path.is_dir():
        path = path / "labeled_data.csv"
    raw = path.read_bytes()
    rows = list(csv.DictReader(raw.decode("utf-8").splitlines(keepends=True)))
    texts = [row["tweet"] for row in rows]
    labels = np.array([int(row["class"]) for row in rows], dtype=np.int64)
    if set(labels.tolist()) != {0, 1, 2}:
        raise ValueError(f"{path}: expected classes 0, 1, 2 in the 'class' column")
    return texts, labels, hashlib.sha256(raw).hexdigest()


def _vectorizers(params: TrainParams) -> tuple[TfidfVectorizer, TfidfVectorizer]:
    common = {"sublinear_tf": True, "lowercase": False, "dtype": np.float64}
    word = TfidfVectorizer(
        analyzer=word_terms, min_df=params.word_min_df, max_features=params.word_max_features, **common
    )
    char = TfidfVectorizer(
        analyzer=char_terms, min_df=params.char_min_df, max_features=params.char_max_features, **common
    )
    return word, char


@dataclass
class Fitted:
    word: TfidfVectorizer
    char: TfidfVectorizer
    classifier: LogisticRegression

    def predict_proba(self, normalized: Sequence[str]) -> npt.NDArray[np.float64]:
        x = hstack([self.word.transform(normalized), self.char.transform(normalized)]).tocsr()
        proba: npt.NDArray[np.float64] = self.classifier.predict_proba(x)
        return proba

    def to_model(self, card: dict[str, object]) -> ToxicityModel:
        blocks, offset = [], 0
        for name, vectorizer in (("word", self.word), ("char", self.char)):
            index = {str(t): int(i) for t, i in vectorizer.vocabulary_.items()}
            blocks.append(Block(name, index, np.asarray(vectorizer.idf_, dtype=np.float64), offset))
            offset += len(index)
        clf = self.classifier
        return ToxicityModel(LABELS, blocks, clf.coef_.astype(np.float64), clf.intercept_, card)


def _vectorize(
    normalized: Sequence[str], params: TrainParams
) -> tuple[TfidfVectorizer, TfidfVectorizer, Matrix]:
    word, char = _vectorizers(params)
    return word, char, hstack([word.fit_transform(normalized), char.fit_transform(normalized)]).tocsr()


def _classifier(x: Matrix, y: Labels, c: float, params: TrainParams) -> LogisticRegression:
    return LogisticRegression(C=c, class_weight="balanced", max_iter=params.max_iter).fit(x, y)


def fit(normalized: Sequence[str], y: Labels, c: float, params: TrainParams) -> Fitted:
    """Fit both vectorizers and the classifier on already normalized texts."""
    word, char, x = _vectorize(normalized, params)
    return Fitted(word, char, _classifier(x, y, c, params))


def choose_c(normalized: Sequence[str], y: Labels, params: TrainParams) -> dict[float, float]:
    """Mean macro-F1 of each C over stratified folds of the training part (vectorizers fitted per fold)."""
    folds = StratifiedKFold(n_splits=params.folds, shuffle=True, random_state=params.seed)
    scores: dict[float, list[float]] = {c: [] for c in params.c_grid}
    for train_idx, val_idx in folds.split(np.zeros(len(y)), y):
        word, char, x = _vectorize([normalized[i] for i in train_idx], params)
        val_texts = [normalized[i] for i in val_idx]
        x_val = hstack([word.transform(val_texts), char.transform(val_texts)]).tocsr()
        for c in params.c_grid:
            predicted = _classifier(x, y[train_idx], c, params).predict(x_val)
            scores[c].append(float(f1_score(y[val_idx], predicted, average="macro")))
    return {c: float(np.mean(s)) for c, s in scores.items()}


def train(data: Path, out: Path, params: TrainParams) -> str:
    """Train, export to ``out``, evaluate the exported model on the held-out split; return the report."""
    texts, y, sha256 = load_davidson(data)
    train_idx, test_idx = train_test_split(
        np.arange(len(y)), test_size=params.test_size, stratify=y, random_state=params.seed
    )
    normalized = [normalize(t) for t in texts]
    train_texts = [normalized[i] for i in train_idx]
    cv = choose_c(train_texts, y[train_idx], params) if len(params.c_grid) > 1 else {params.c_grid[0]: 0.0}
    best_c = max(cv, key=lambda c: (cv[c], -c))
    fitted = fit(train_texts, y[train_idx], best_c, params)
    card: dict[str, object] = {
        "data": {"file": "labeled_data.csv (Davidson et al. 2017)", "sha256": sha256, "rows": len(y)},
        "split": {
            "seed": params.seed,
            "test_size": params.test_size,
            "train": len(train_idx),
            "test": len(test_idx),
        },
        "params": {**params.__dict__, "c_grid": list(params.c_grid), "c": best_c},
        "cv_macro_f1": {str(c): round(s, 4) for c, s in cv.items()},
    }
    model = fitted.to_model(card)
    model.save(out)
    shipped = ToxicityModel.load(out)
    metrics = evaluate(shipped, [texts[i] for i in test_idx], y[test_idx])
    shipped.card["held_out"] = metrics
    shipped.save(out)
    return format_report(metrics, cv, best_c)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="labeled_data.csv or its directory")
    parser.add_argument("--out", type=Path, default=DEFAULT_MODEL_DIR, help="artefact directory to write")
    parser.add_argument("--seed", type=int, default=TrainParams.seed)
    parser.add_argument("--c", type=float, action="append", help="C to try (repeat); default 1, 3, 10")
    args = parser.parse_args(argv)
    params = TrainParams(seed=args.seed, c_grid=tuple(args.c) if args.c else TrainParams.c_grid)
    print(train(args.data, args.out, params))


if __name__ == "__main__":
    main()
