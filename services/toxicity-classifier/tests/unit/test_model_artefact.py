"""The exported artefact predicts exactly what the fitted scikit-learn pipeline predicts, and loads safely."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from stockade.toxicity_classifier.features import normalize
from stockade.toxicity_classifier.model import DEFAULT_MODEL_DIR, ModelLoadError, ToxicityModel
from stockade.toxicity_classifier.train import LABELS, TrainParams, fit

TEXTS = [
    "thank you so much for the lovely flowers",
    "what a great game last night, well played",
    "see you at the library tomorrow morning",
    "shut up you stupid clown, nobody asked",
    "you are a useless moron and a total joke",
    "get lost, idiot, you are pathetic",
    "people like them are vermin and should vanish",
    "those people are subhuman and deserve nothing",
    "we should drive every one of them out of town",
]
CLASSES = np.array([2, 2, 2, 1, 1, 1, 0, 0, 0])
UNSEEN = ["the flowers were lovely", "you pathetic clown", "they are vermin", "", "!!!", "zzz qqq"]
SMALL = TrainParams(word_min_df=1, char_min_df=1, word_max_features=500, char_max_features=800)


@pytest.fixture(scope="module")
def fitted():
    return fit([normalize(t) for t in TEXTS], CLASSES, 3.0, SMALL)


def test_saved_model_predicts_what_scikit_learn_predicts(fitted, tmp_path: Path):
    fitted.to_model({"note": "test"}).save(tmp_path)
    loaded = ToxicityModel.load(tmp_path)
    expected = fitted.predict_proba([normalize(t) for t in UNSEEN + TEXTS])
    got = loaded.predict_proba(UNSEEN + TEXTS)
    np.testing.assert_allclose(got, expected, atol=1e-5)  # float32 weights on disk
    assert loaded.labels == LABELS and loaded.card["note"] == "test"
    np.testing.assert_allclose(got.sum(axis=1), 1.0)


def test_classify_lists_every_label_most_likely_first(fitted):
    model = fitted.to_model({})
    for labels in model.classify(UNSEEN):
        assert sorted(label for label, _ in labels) == sorted(LABELS)
        scores = [score for _, score in labels]
        assert scores == sorted(scores, reverse=True) and abs(sum(scores) - 1) < 1e-9


def test_artefact_holds_no_pickle(fitted, tmp_path: Path):
    fitted.to_model({}).save(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["card.json", "vocabulary.json", "weights.npz"]
    with np.load(tmp_path / "weights.npz", allow_pickle=False) as weights:
        assert all(weights[name].dtype == np.float32 for name in weights.files)


def test_load_refuses_a_missing_incomplete_or_mismatched_artefact(fitted, tmp_path: Path):
    with pytest.raises(ModelLoadError, match="cannot read"):
        ToxicityModel.load(tmp_path / "absent")
    fitted.to_model({}).save(tmp_path)
    card = json.loads((tmp_path / "card.json").read_text())
    (tmp_path / "card.json").write_text(json.dumps({**card, "featurizer": "0"}))
    with pytest.raises(ModelLoadError, match="retrain"):
        ToxicityModel.load(tmp_path)
    (tmp_path / "card.json").write_text(json.dumps(card))
    vocabulary = json.loads((tmp_path / "vocabulary.json").read_text())
    (tmp_path / "vocabulary.json").write_text(json.dumps({**vocabulary, "char": vocabulary["char"][:-1]}))
    with pytest.raises(ModelLoadError, match="do not fit"):
        ToxicityModel.load(tmp_path)
    (tmp_path / "vocabulary.json").write_text(json.dumps({"word": vocabulary["word"]}))
    with pytest.raises(ModelLoadError, match="lacks 'char'"):
        ToxicityModel.load(tmp_path)


def test_shipped_artefact_is_small_and_says_how_it_was_made():
    size = sum(p.stat().st_size for p in DEFAULT_MODEL_DIR.iterdir())
    assert size < 5 * 1024 * 1024, size
    model = ToxicityModel.load()
    assert model.labels == LABELS
    assert len(model.card["data"]["sha256"]) == 64 and model.card["split"]["test"] > 2000
    held_out = model.card["held_out"]
    assert {"toxic", "offensive", "non-toxic", "overall"} <= set(held_out)
