"""Shared Presidio engines: one analyzer per (model, language, PHI) per process, loaded on first use."""

from __future__ import annotations

import logging
import os
import stat
import tempfile
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from stockade.guardrails.checks.pii.email_ip import email_recognizer, ip_recognizer
from stockade.guardrails.checks.pii.location_recognizers import location_recognizers
from stockade.guardrails.checks.pii.nlp import (
    compiled_with_profiling,
    context_enhancer,
    ner_only_engine,
    use_numpy_matmul,
)
from stockade.guardrails.checks.pii.person_recognizers import person_recognizers
from stockade.guardrails.checks.pii.phi_recognizers import phi_recognizers
from stockade.guardrails.checks.pii.phone import phone_recognizer
from stockade.guardrails.checks.pii.url import url_recognizer
from stockade.guardrails.extras import require

FEATURE = "PII/PHI detection"
log = logging.getLogger(__name__)


def ensure_importable(spacy_model: str) -> None:
    """Fail fast with MissingExtraError naming the ``pii`` extra."""
    require("presidio_analyzer", extra="pii", feature=FEATURE)
    require("presidio_anonymizer", extra="pii", feature=FEATURE)
    require(spacy_model, extra="pii", feature=f"{FEATURE} (spaCy model {spacy_model})")


def default_ner_configuration() -> dict[str, Any]:
    """Presidio's own default ``ner_model_configuration`` (without it ORGANIZATION floods in)."""
    presidio = require("presidio_analyzer", extra="pii", feature=FEATURE)
    conf = Path(str(presidio.__file__)).parent / "conf" / "default.yaml"
    data = yaml.safe_load(conf.read_text(encoding="utf-8"))
    ner: dict[str, Any] = data["ner_model_configuration"]
    return ner


class SharedAnalyzer:
    """An AnalyzerEngine plus a lock (spaCy pipelines are not safe to call from several threads at once)."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.lock = threading.Lock()

    def analyze(self, text: str, *, language: str, entities: list[str], score_threshold: float) -> list[Any]:
        with self.lock:
            results: list[Any] = self.engine.analyze(
                text=text, language=language, entities=entities, score_threshold=score_threshold
            )
        return results


@lru_cache(maxsize=8)
def shared_analyzer(
    spacy_model: str,
    language: str,
    with_phi: bool,
    offline_suffix_list: bool = True,
    with_locations: bool = True,
    disable_parser: bool = True,
    lemmas: str = "lowercase",
    ner_matmul: str = "numpy",
) -> SharedAnalyzer:
    """``lemmas="lowercase"``: run only spaCy's ``ner`` pipe, lemmas are the lower-cased token text (see
    ``nlp.py``); ``"spacy"``: Presidio's engine with the full pipeline (minus the parser if ``disable_parser``).
    ``ner_matmul="numpy"``: the spaCy layers multiply with numpy's BLAS, one thread (``use_numpy_matmul``);
    ``"blis"``: thinc's default."""
    # The e-mail recognizer's tldextract fetches the suffix list; give it a writable cache (it falls back offline).
    if "TLDEXTRACT_CACHE" not in os.environ:
        os.environ["TLDEXTRACT_CACHE"] = str(private_cache_dir("stockade-tldextract"))
    if offline_suffix_list:
        _use_bundled_suffix_list()
    presidio = require("presidio_analyzer", extra="pii", feature=FEATURE)
    if lemmas == "lowercase":
        nlp_engine = ner_only_engine(spacy_model, language, default_ner_configuration())
        enhancer = context_enhancer()
    elif lemmas == "spacy":
        nlp_engine_mod = require("presidio_analyzer.nlp_engine", extra="pii", feature=FEATURE)
        provider = nlp_engine_mod.NlpEngineProvider(
            nlp_configuration={
                "nlp_engine_name": "spacy",
                "models": [{"lang_code": language, "model_name": spacy_model}],
                "ner_model_configuration": default_ner_configuration(),
            }
        )
        nlp_engine = provider.create_engine()
        if disable_parser:  # Presidio uses tokens, lemmas and entities, never the dependency parse
            for nlp in nlp_engine.nlp.values():
                if "parser" in nlp.pipe_names:
                    nlp.disable_pipe("parser")
        enhancer = None  # Presidio's LemmaContextAwareEnhancer
    else:
        raise ValueError(f"lemmas must be 'lowercase' or 'spacy', not {lemmas!r}")
    if ner_matmul == "numpy":
        for nlp in nlp_engine.nlp.values():
            use_numpy_matmul(nlp)
    elif ner_matmul != "blis":
        raise ValueError(f"ner_matmul must be 'numpy' or 'blis', not {ner_matmul!r}")
    if compiled_with_profiling():
        log.warning(
            "spaCy was compiled with Cython profiling (its setup.py does so on Python < 3.12): the PII check's NER "
            "runs several times slower. Rebuild it without profiling (python3 dev.py install --ml does) or use "
            "Python 3.12+; see libs/guardrails/docs/measurements.md, 'spaCy on Python 3.11'."
        )
    registry = presidio.RecognizerRegistry(supported_languages=[language])
    registry.load_predefined_recognizers(languages=[language], nlp_engine=nlp_engine)
    replacements = {
        "PhoneRecognizer": phone_recognizer,  # same results, fewer parses
        "UrlRecognizer": url_recognizer,  # linear time; paths and file names are not URLs
        "EmailRecognizer": email_recognizer,  # reserved and private-use domains are addresses too
        "IpRecognizer": ip_recognizer,  # loopback, private and reserved addresses identify no one
    }
    for name, make in replacements.items():
        if any(r.name == name for r in registry.recognizers):
            registry.remove_recognizer(name)
            registry.add_recognizer(make(language))
    if with_phi:
        for recognizer in phi_recognizers(language):
            registry.add_recognizer(recognizer)
    if with_locations:
        for recognizer in [*location_recognizers(language), *person_recognizers(language)]:
            registry.add_recognizer(recognizer)
    engine = presidio.AnalyzerEngine(
        nlp_engine=nlp_engine,
        registry=registry,
        supported_languages=[language],
        context_aware_enhancer=enhancer,
    )
    return SharedAnalyzer(engine)


def _use_bundled_suffix_list() -> None:
    """Make tldextract use its bundled public-suffix snapshot instead of fetching it over the network."""
    tld = require("tldextract.tldextract", extra="pii", feature=FEATURE)
    tld.TLD_EXTRACTOR.suffix_list_urls = ()


@lru_cache(maxsize=1)
def operators() -> dict[str, Any]:
    ops = require("presidio_anonymizer.operators", extra="pii", feature=FEATURE)
    return {"mask": ops.Replace(), "redact": ops.Redact(), "hash": ops.Hash()}


def private_cache_dir(name: str) -> Path:
    """A cache directory in the temp dir that only this user can write: ``<tmp>/<name>-<uid>``, mode 0700, used
    only when this user owns it and nobody else may write it; otherwise a fresh private one. A fixed, shared
    path could be created first by another local user and fed a poisoned suffix list (review finding L8)."""
    uid = os.getuid() if hasattr(os, "getuid") else 0
    path = Path(tempfile.gettempdir()) / f"{name}-{uid}"
    try:
        path.mkdir(mode=0o700, exist_ok=True)
        info = path.lstat()
        if stat.S_ISDIR(info.st_mode) and info.st_uid == uid and not info.st_mode & 0o022:
            return path
    except OSError:
        pass
    return Path(tempfile.mkdtemp(prefix=f"{name}-"))
