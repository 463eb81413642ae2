"""Training is reproducible: the same data and seed write the same artefact bytes, and the report covers
every class of the held-out split. Runs on a small corpus written here (never the real tweets)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from stockade.toxicity_classifier.model import ToxicityModel
from stockade.toxicity_classifier.train import TrainParams, load_davidson, train

SUBJECTS = ["the neighbours", "my coworkers", "the new players", "those tourists", "the organisers"]
TEMPLATES = {
    2: ["{s} brought cake today", "had a nice chat with {s}", "{s} helped me move the sofa", "thanks to {s}"],
    1: ["{s} are stupid clowns", "shut up, {s}, you morons", "{s} are useless idiots", "{s} suck so bad"],
    0: ["{s} are vermin", "drive {s} out of town", "{s} are subhuman filth", "{s} deserve to vanish"],
}
PARAMS = TrainParams(c_grid=(1.0, 3.0), folds=2, word_min_df=1, char_min_df=1)


def write_corpus(path: Path) -> Path:
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["", "count", "hate_speech", "offensive_language", "neither", "class", "tweet"])
        n = 0
        for cls, templates in TEMPLATES.items():
            for template in templates:
                for subject in SUBJECTS:
                    votes = [3 if cls == k else 0 for k in range(3)]
                    writer.writerow([n, 3, *votes, cls, template.format(s=subject)])
                    n += 1
    return path


def test_same_data_and_seed_write_the_same_artefact(tmp_path: Path):
    corpus = write_corpus(tmp_path / "labeled_data.csv")
    report = train(corpus, tmp_path / "a", PARAMS)
    train(tmp_path, tmp_path / "b", PARAMS)  # a directory holding labeled_data.csv works too
    for name in ("card.json", "vocabulary.json", "weights.npz"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    card = ToxicityModel.load(tmp_path / "a").card
    texts, _, sha256 = load_davidson(corpus)
    assert card["data"] == {"file": card["data"]["file"], "sha256": sha256, "rows": len(texts)}
    assert card["split"]["test"] == 6 and card["params"]["c"] in PARAMS.c_grid
    for label in ("toxic", "offensive", "non-toxic", "overall"):
        assert label in report and card["held_out"][label]["support"] > 0


def test_a_file_without_the_three_classes_is_refused(tmp_path: Path):
    path = tmp_path / "labeled_data.csv"
    path.write_text("count,class,tweet\n3,2,hello there\n3,1,you clown\n")
    with pytest.raises(ValueError, match="classes 0, 1, 2"):
        load_davidson(path)
