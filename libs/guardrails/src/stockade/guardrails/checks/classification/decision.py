"""The document-level decision of the shipped classifier: is this text an attack at all, and of which kind.

The text's attack score is its highest window score of "attack of any kind" (``1 - P(benign)``, through the
decision head when the model has one: head.py); the kind is that window's most likely attack class. Under the
typed-attack rule (model.py) that is the top class's score.

Why one attack threshold and not one per class: sources disagree on where injection ends and jailbreak begins,
so the model splits a clear attack between classes; with a threshold per class each part stayed under its own,
and adding a role-play sentence to an injection made it pass. ``1 - P(benign)`` does not split.

Why the threshold depends on the number of windows: the verdict is the most suspicious window, so a document of
n windows has n chances to be a false positive. The thresholds may grow with the window count, calibrated on long
benign documents (``bench/calibrate_decision.py``) so that a document of any length is flagged about as often
as a short text, while an attack planted anywhere still scores near 1 in its own window.

Why a second rule for documents, the spike: a benign document that talks about instructions, prompts or rules
scores high in many windows, while an attack planted in an ordinary document is one local peak. The spike
score of a text whose model read at least ``SPIKE_MIN_WINDOWS`` windows is ``logit(top) - weight *
median(logit(rest))``: the most suspicious window measured against the document's own baseline (the median of
the other windows read). A document is flagged when its top window reaches the window-count threshold (the
rule above) **or** its spike reaches the spike threshold for its window count; the OR keeps a document that is
an attack throughout (a long jailbreak template, whose baseline is high) flagged by its top window. The rule
applies to a preset that carries it; the presets shipped since 2026-11-30 (fifteenth round) carry none, because
held out it flagged more clean documents than the top window alone (docs/checks.md, attack decision).

Why a third rule for short documents, the sentence: a text of a few windows (up to ``sentences.max_windows`` in
classifier.json, about 1 kB) also has the sentences of its most suspicious window read alone (model.py; only the
``sentences.read`` of them the screener ranks highest, one in the shipped model), because an instruction between
two paragraphs of an e-mail shares its 64-token window with their prose and is diluted.
Read alone, ordinary imperative sentences ("Write a function that...") score high too, so the sentence has a
threshold of its own, set on the same benign documents with a quarter of the preset's budget; folded into the
window score instead, it raised the window threshold for every text of that length and cost long jailbreak
prompts their recall.

With ``library: true`` (off by default) the best known-attack library match (library.py) is reported in every
finding's detail, and a match at or above the library's own calibrated similarity flags a text the rules above
let through, with the matched entry's kind, source and window.

The calibration ships in the model directory's ``classifier.json`` under ``decision``: per operating point
(``strict``, ``balanced``, ``permissive``) a table of ``[windows, threshold]`` rows, ascending; a text of ``n``
windows uses the first row whose ``windows`` is at least ``n`` (the last row beyond it). A preset may also carry
``spike``: ``{"weight": w, "thresholds": [[windows, threshold], ...]}`` (thresholds in logit units), and
``sentences``: ``{"thresholds": [[windows, threshold], ...]}`` (probabilities).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from stockade.guardrails.checks.classification.config import ClassificationConfig
from stockade.guardrails.checks.classification.model import Scores
from stockade.guardrails.verdict import Action, CheckResult, Finding

ATTACKS = ("injection", "jailbreak", "malicious")
SPIKE_MIN_WINDOWS = 3
_CLIP = 1e-4
_ACTIONS = {"block": Action.BLOCK, "warn": Action.WARN, "allow": Action.ALLOW}


def threshold_for(table: Sequence[Sequence[float]], windows: int) -> float:
    """The threshold of a text of ``windows`` windows in a ``[windows, threshold]`` table."""
    for up_to, threshold in table:
        if windows <= up_to:
            return float(threshold)
    return float(table[-1][1])


def operating_points(meta: Mapping[str, Any]) -> dict[str, list[list[float]]]:
    """Each calibrated operating point's table in a model's ``classifier.json`` (empty when it has none)."""
    presets = (meta.get("decision") or {}).get("presets") or {}
    return {str(name): [[float(n), float(t)] for n, t in p["thresholds"]] for name, p in presets.items()}


def spikes(meta: Mapping[str, Any]) -> dict[str, tuple[float, list[list[float]]]]:
    """Each operating point's spike rule (weight, ``[windows, threshold]`` table), for those that have one."""
    presets = (meta.get("decision") or {}).get("presets") or {}
    out = {}
    for name, p in presets.items():
        spike = p.get("spike")
        if spike:
            table = [[float(n), float(t)] for n, t in spike["thresholds"]]
            out[str(name)] = (float(spike["weight"]), table)
    return out


def sentence_tables(meta: Mapping[str, Any]) -> dict[str, list[list[float]]]:
    """Each operating point's sentence thresholds, for those that have them."""
    presets = (meta.get("decision") or {}).get("presets") or {}
    out = {}
    for name, p in presets.items():
        if sentences := p.get("sentences"):
            out[str(name)] = [[float(n), float(t)] for n, t in sentences["thresholds"]]
    return out


def logit(p: float) -> float:
    p = min(1.0 - _CLIP, max(_CLIP, p))
    return math.log(p / (1.0 - p))


def spike_score(window_attack: Sequence[float], weight: float) -> float | None:
    """``logit(top) - weight * median(logit(rest))`` over the windows read; None under SPIKE_MIN_WINDOWS."""
    if len(window_attack) < SPIKE_MIN_WINDOWS:
        return None
    z = sorted(logit(a) for a in window_attack)
    return z[-1] - weight * statistics.median(z[:-1])


def attack_score(scores: Scores) -> tuple[str, float]:
    """The most likely attack kind and the text's attack score."""
    kind = max(ATTACKS, key=lambda c: scores.probs.get(c, 0.0))
    return kind, scores.probs.get(kind, 0.0)


def check_result(
    name: str, scores: Scores, meta: Mapping[str, Any], config: ClassificationConfig
) -> CheckResult | None:
    """The check's result under the model's calibrated decision, or None where it does not apply: per-class
    ``thresholds`` / ``context_thresholds`` are configured, or the model directory has no ``decision``."""
    if config.thresholds or config.context_thresholds:
        return None
    points = operating_points(meta)
    preset = config.preset or str((meta.get("decision") or {}).get("default", "balanced"))
    if preset not in points:
        return None
    threshold = threshold_for(points[preset], scores.windows)
    kind, score = attack_score(scores)
    detail: dict[str, Any] = {"threshold": round(threshold, 4), "preset": preset, "windows": scores.windows}
    fired = score >= threshold
    spike_rule = spikes(meta).get(preset)
    if spike_rule is not None:
        weight, table = spike_rule
        spike = spike_score(scores.window_attack, weight)
        if spike is not None:
            spike_threshold = threshold_for(table, scores.windows)
            detail.update(spike=round(spike, 3), spike_threshold=round(spike_threshold, 3))
            fired = fired or spike >= spike_threshold
    sentence_table = sentence_tables(meta).get(preset)
    if sentence_table is not None and scores.sentence_kind:
        sentence_threshold = threshold_for(sentence_table, scores.windows)
        detail.update(
            sentence=round(scores.sentence_attack, 4), sentence_threshold=round(sentence_threshold, 4)
        )
        if scores.sentence_attack >= sentence_threshold and not fired:
            # an instruction read alone: the kind and the span are the sentence's
            fired, kind, score = True, scores.sentence_kind, max(score, scores.sentence_attack)
            scores = replace(scores, spans={**scores.spans, kind: scores.sentence_span})
            detail["rule"] = "sentence"
    findings = []
    match = scores.library
    if config.library and match is not None:
        library_threshold = match.threshold
        detail.update(library_source=match.source, library_similarity=round(match.similarity, 3))
        if match.similarity >= library_threshold and not fired:
            # a known attack: the kind is the matched entry's, the span its window's
            fired, kind, score = True, match.label, max(score, match.similarity)
            scores = replace(scores, spans={**scores.spans, kind: scores.library_span})
            detail.update(rule="library", library_threshold=round(library_threshold, 3))
    action = _ACTIONS[config.actions.get(kind, "block")]  # type: ignore[call-overload]
    if fired and action is not Action.ALLOW:
        start, end = scores.spans.get(kind, (0, 0))
        detail["windows_read"] = scores.read
        findings.append(
            Finding(
                check=name,
                type=kind,
                start=start,
                end=end,
                score=round(score, 4),
                action=action,
                detail=detail,
            )
        )
    return CheckResult(
        check=name,
        action=Action.strongest([f.action for f in findings]),
        findings=findings,
        score=round(min(1.0, max(0.0, score)), 4),
    )
