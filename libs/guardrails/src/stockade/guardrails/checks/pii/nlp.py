"""A faster NLP step for Presidio: spaCy's NER pipe alone, lower-cased token text as lemmas.

Presidio's own ``SpacyNlpEngine`` runs the whole spaCy pipeline; in the small English models the tagger,
attribute ruler and lemmatizer (and their shared tok2vec) run only to give lemmas to the context enhancer,
while ``ner`` has its own tok2vec. :func:`ner_only_engine` runs ``ner`` (plus any component it listens to)
and uses the lower-cased token text as the lemma. The context enhancer matches context words as substrings of
those words ("numbers" and "phones" still contain "number" and "phone"), so only irregular forms differ.

:func:`context_enhancer` is Presidio's ``LemmaContextAwareEnhancer`` with the same rule, made cheaper: the
token under a match is found by bisection instead of a walk over the spaCy ``Doc``, keyword membership is a set
lookup, and the analyzer's freshly made results are updated in place instead of deep-copied first.

:func:`use_numpy_matmul` makes the spaCy models multiply their layer matrices with numpy (its OpenBLAS, one
thread) instead of thinc's BLIS, which falls back to its generic, unvectorised kernels on CPUs its build does
not know (BLIS_ARCH_DEBUG=1 prints "selecting sub-configuration 'generic'" on such a CPU): the NER pipe
is faster there, with the same entities (figures: libs/guardrails/docs/measurements.md, "spaCy on Python
3.11"). spaCy's compiled transition loop keeps using BLIS.

:func:`compiled_with_profiling` tells whether spaCy's transition code was compiled with Cython's ``profile``
directive, which spaCy's setup.py turns on for Python < 3.12 (so every PyPI wheel for 3.11 has it). Each small
C++ call of the NER's ``nogil`` transition loop then takes and releases the GIL to ask whether a profiler is set,
most of the NER's time on a short text, and more when another thread wants the GIL.
``python3 dev.py install --ml`` rebuilds the locked spaCy with profiling off (figures: the same section).
"""

from __future__ import annotations

import importlib.util
from bisect import bisect_right
from functools import lru_cache
from pathlib import Path
from typing import Any

from stockade.guardrails.extras import require

FEATURE = "PII/PHI detection"


def ner_only_engine(model_name: str, language: str, ner_configuration: dict[str, Any]) -> Any:
    """A loaded Presidio NLP engine running only spaCy's ``ner`` pipe, lemmas = lower-cased token text."""
    engine = _classes()[0](
        models=[{"lang_code": language, "model_name": model_name}],
        ner_model_configuration=require(
            "presidio_analyzer.nlp_engine", extra="pii", feature=FEATURE
        ).NerModelConfiguration.from_dict(ner_configuration),
    )
    engine.load()
    return engine


def context_enhancer() -> Any:
    """Presidio's lemma context enhancer (same defaults and rule) without the per-call deep copy and Doc walks."""
    return _classes()[1]()


def keep_only_ner(nlp: Any) -> None:
    """Disable every pipe but ``ner`` and the components ``ner`` listens to (a shared tok2vec/transformer)."""
    if "ner" not in nlp.pipe_names:
        raise ValueError("the spaCy model has no 'ner' pipe")
    needed = {"ner"}
    for name, component in nlp.pipeline:
        if "ner" in (getattr(component, "listening_components", None) or []):
            needed.add(name)
    for name in list(nlp.pipe_names):
        if name not in needed:
            nlp.disable_pipe(name)


def use_numpy_matmul(nlp: Any) -> None:
    """Route the matrix products of every layer of ``nlp`` through numpy and keep numpy's BLAS to one thread.

    The thread limit is process-wide (threadpoolctl, every BLAS library loaded so far): with two or more
    threads, OpenBLAS's workers contend with the other checks running beside this one and the products get
    slower, not faster."""
    ops_mod = require("thinc.api", extra="pii", feature=FEATURE)
    threadpoolctl = require("threadpoolctl", extra="pii", feature=FEATURE)
    ops = ops_mod.NumpyOps(use_blis=False)
    for _, component in nlp.pipeline:
        model = getattr(component, "model", None)
        if model is not None and hasattr(model, "walk"):
            for node in model.walk():
                node.ops = ops
    threadpoolctl.threadpool_limits(limits=1, user_api="blas")


# Cython's profiling helper; its name stays in the symbol table of a module compiled with ``profile=True``.
_PROFILING_SYMBOL = b"__Pyx_TraceSetupAndCall"


def compiled_with_profiling(module_file: str | Path | None = None) -> bool:
    """Whether the compiled module (default: spaCy's parser state, used by the NER loop) carries Cython's
    profiling hooks. A stripped build gives False, as does a missing file."""
    if module_file is None:
        spec = importlib.util.find_spec("spacy.pipeline._parser_internals.stateclass")
        module_file = spec.origin if spec else None
        if not module_file:
            return False
    try:
        return _PROFILING_SYMBOL in Path(module_file).read_bytes()
    except OSError:
        return False


@lru_cache(maxsize=1)
def _classes() -> tuple[Any, Any]:
    nlp_engine_mod = require("presidio_analyzer.nlp_engine", extra="pii", feature=FEATURE)
    enhancers = require("presidio_analyzer.context_aware_enhancers", extra="pii", feature=FEATURE)
    presidio = require("presidio_analyzer", extra="pii", feature=FEATURE)
    attrs = require("spacy.attrs", extra="pii", feature=FEATURE)
    columns = [attrs.IDX, attrs.LENGTH, attrs.IS_STOP, attrs.IS_PUNCT]
    base_artifacts: Any = nlp_engine_mod.NlpArtifacts
    base_engine: Any = nlp_engine_mod.SpacyNlpEngine

    class LowercaseArtifacts(base_artifacts):  # type: ignore[misc]
        """NlpArtifacts with lemma = lower-cased text; keywords built from token flags (no vocab lookups),
        plus ``token_ends`` and ``keyword_set`` for the enhancer."""

        def __init__(self, doc: Any, entities: Any, scores: list[float], engine: Any, language: str) -> None:
            # Token texts sliced from the text by offset and length: one array read instead of a Token object
            # per token (a third of the check's time on 20 kB when made one by one).
            table = doc.to_array(columns).tolist() if len(doc) else []
            whole = doc.text
            texts = [whole[idx : idx + length] for idx, length, _, _ in table]
            lemmas = [t.lower() for t in texts]
            super().__init__(
                entities=entities,
                tokens=doc,
                tokens_indices=[row[0] for row in table],
                lemmas=lemmas,
                nlp_engine=None,  # keywords are computed below, from the token flags
                language=language,
                scores=scores,
            )
            self.nlp_engine = engine
            # Presidio's set_keywords on these lemmas: drop stop words and punctuation, split on ":".
            keywords: list[str] = []
            for lemma, (_, _, is_stop, is_punct) in zip(lemmas, table, strict=True):
                if is_stop or is_punct or lemma == "be":
                    continue
                keywords.extend(lemma.split(":") if ":" in lemma else (lemma,))
            self.keywords = keywords
            self.keyword_set = frozenset(keywords)
            self.token_ends = [idx + length for idx, length, _, _ in table]

    class NerOnlySpacyNlpEngine(base_engine):  # type: ignore[misc]
        def load(self) -> None:
            super().load()
            for nlp in self.nlp.values():
                keep_only_ner(nlp)

        def _doc_to_nlp_artifact(self, doc: Any, language: str) -> Any:
            entities, scores = self._get_updated_entities(
                self._get_entities(doc), self._get_scores_for_entities(doc)
            )
            return LowercaseArtifacts(doc, entities, scores, self, language)

    base_enhancer: Any = enhancers.LemmaContextAwareEnhancer
    max_score = enhancers.ContextAwareEnhancer.MAX_SCORE
    id_key = presidio.RecognizerResult.RECOGNIZER_IDENTIFIER_KEY
    enhanced_key = presidio.RecognizerResult.IS_SCORE_ENHANCED_BY_CONTEXT_KEY

    class FastContextEnhancer(base_enhancer):  # type: ignore[misc]
        def enhance_using_context(
            self,
            text: str,
            raw_results: list[Any],
            nlp_artifacts: Any,
            recognizers: list[Any],
            context: list[str] | None = None,
        ) -> list[Any]:
            # Same rule as LemmaContextAwareEnhancer.enhance_using_context; the analyzer passes results made
            # for this call only, so they are updated in place.
            if nlp_artifacts is None:
                return raw_results
            by_id = {r.id: r for r in recognizers}
            extra = [w.lower() for w in context] if context else []
            for result in raw_results:
                meta = result.recognition_metadata
                recognizer = by_id.get(meta[id_key]) if meta and id_key in meta else None
                if recognizer is None or not recognizer.context or meta.get(enhanced_key):
                    continue
                words = self._extract_surrounding_words(
                    nlp_artifacts=nlp_artifacts, word=text[result.start : result.end], start=result.start
                )
                words.extend(extra)
                support = self._find_supportive_word_in_context(
                    words, recognizer.context, self.context_matching_mode
                )
                if support != "":
                    result.score = min(
                        max(
                            result.score + self.context_similarity_factor,
                            self.min_score_with_context_similarity,
                        ),
                        max_score,
                    )
                    result.analysis_explanation.set_supportive_context_word(support)
                    result.analysis_explanation.set_improved_score(result.score)
            return raw_results

        def _extract_surrounding_words(self, nlp_artifacts: Any, word: str, start: int) -> list[str]:
            ends = getattr(nlp_artifacts, "token_ends", None)
            if ends is None:
                words: list[str] = super()._extract_surrounding_words(nlp_artifacts, word, start)
                return words
            if not ends:
                return [""]
            index = bisect_right(ends, start)  # first token ending after the match start (Presidio's rule)
            if index == len(ends):
                raise ValueError(f"Did not find word '{word}' in the list of tokens although it is expected")
            keywords = nlp_artifacts.keyword_set
            lemmas = nlp_artifacts.lemmas
            backward = self._add_n_words(index, self.context_prefix_count, lemmas, keywords, True)
            forward = self._add_n_words(index, self.context_suffix_count, lemmas, keywords, False)
            return list({*backward, *forward})

    return NerOnlySpacyNlpEngine, FastContextEnhancer
