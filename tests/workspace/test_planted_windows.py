"""bench/train_classifier.py's ``--planted-windows``: an attack planted in ordinary text (classifier_data's
embed_attacks) knows where it lies, and training reads every window that holds enough of it, wherever the
windows' edges fall, and none that holds only prose."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture(scope="module")
def tc():  # noqa: ANN201 - the bench module
    sys.path.insert(0, str(BENCH))
    try:
        import train_classifier
    finally:
        sys.path.remove(str(BENCH))
    return train_classifier


def _tokenizer(words: list[str]):  # noqa: ANN202 - a tokenizers.Tokenizer: one token per word
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace

    tok = tokenizers.Tokenizer(WordLevel({w: i for i, w in enumerate(["[UNK]", *words])}, unk_token="[UNK]"))
    tok.pre_tokenizer = Whitespace()
    return tok


@pytest.mark.parametrize("attack_words", [6, 40, 100])
def test_planted_windows_hold_the_attack_and_never_prose_alone(
    tc,  # noqa: ANN001 - the bench module
    monkeypatch: pytest.MonkeyPatch,
    attack_words: int,
) -> None:
    from classifier_data import Example, embed_attacks

    prose = " ".join(f"p{i}" for i in range(400))
    attack = " ".join(f"a{i}" for i in range(attack_words))
    examples = [Example(prose, "benign", "host"), Example(attack, "injection", "attacks")]
    planted = embed_attacks(examples, 30, seed=5, anywhere=True)
    assert all(e.span and e.text[e.span[0] : e.span[1]] == attack for e, _, _ in planted)

    for name, value in (("BODY", 62), ("STRIDE", 40), ("PLANTED_WINDOWS", True)):  # the check's windows
        monkeypatch.setattr(tc, name, value)
    corpus = tc.Corpus([e for e, _, _ in planted], _tokenizer([*prose.split(), *attack.split()]))
    need = min(-(-3 * attack_words // 4), 24)  # three quarters of a short attack, 24 tokens of a long one
    for i in range(len(planted)):
        first, last = corpus.spans[i]
        assert last - first == attack_words
        chosen = tc.training_windows(corpus, i, screener=None, rng=None)
        assert chosen, "a planted attack trains at least one window"
        for w, start in enumerate(corpus.starts[i]):
            held = min(last, start + len(corpus.windows[i][w])) - max(first, start)
            assert (w in chosen) == (held >= need), (w, held)
        if attack_words <= 22:  # it fits inside the windows' overlap, so some window holds all of it
            assert any(corpus.starts[i][w] <= first and last <= corpus.starts[i][w] + 62 for w in chosen)
