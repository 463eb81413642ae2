"""The document-level decision (decision.py): the top-window rule by window count, the spike rule that weighs a
document's most suspicious window against the document's own baseline, and the sentence rule of short
documents."""

from __future__ import annotations

import math
import random

import pytest

from stockade.guardrails import GuardrailSystem
from stockade.guardrails.checks.classification.decision import check_result, logit, spike_score
from stockade.guardrails.checks.classification.model import Scores, default_model_dir, load
from stockade.guardrails.checks.config import ClassificationConfig
from stockade.guardrails.verdict import Action

TOP = [[1, 0.90], [8, 0.96], [40, 0.99], [160, 0.997], [4096, 0.997]]
META = {
    "decision": {
        "default": "balanced",
        "presets": {
            "balanced": {"thresholds": TOP, "spike": {"weight": 0.5, "thresholds": [[1, 99.0], [4096, 6.0]]}},
            "strict": {"thresholds": TOP},
        },
    }
}
LABELS = ("benign", "injection", "jailbreak", "malicious")
ONLY_CLASSIFICATION = {
    "pii": {"enabled": False},
    "exfiltration": {"enabled": False},
    "classification": {"enabled": True},
}


def scores(windows: list[float], total: int | None = None) -> Scores:
    top = max(windows)
    return Scores(
        probs={"benign": 1 - top, "injection": top, "jailbreak": 0.0, "malicious": 0.0},
        spans={k: (100, 200) for k in LABELS},
        windows=total or len(windows),
        read=len(windows),
        window_attack=tuple(windows),
    )


def decide(windows: list[float], preset: str | None = None, total: int | None = None) -> Action:
    result = check_result("classification", scores(windows, total), META, ClassificationConfig(preset=preset))
    assert result is not None
    return result.action


def test_spike_score_is_the_top_window_against_the_median_of_the_rest() -> None:
    wins = [0.5, 0.1, 0.9, 0.2]
    expected = logit(0.9) - 0.5 * logit(0.2)  # the median of the rest (0.1, 0.2, 0.5) is 0.2
    assert spike_score(wins, 0.5) == pytest.approx(expected)
    assert spike_score([0.5, 0.9], 0.5) is None  # under three windows there is no baseline
    assert logit(1.0) == pytest.approx(math.log((1 - 1e-4) / 1e-4))  # clipped, finite


def test_a_local_peak_in_a_calm_document_is_flagged_below_the_top_window_threshold() -> None:
    calm = [0.02] * 15
    peak = [*calm[:7], 0.99, *calm[7:]]  # 0.99 < the 0.997 a 120-window document needs
    assert decide(calm, total=120) is Action.ALLOW
    result = check_result("classification", scores(peak, 120), META, ClassificationConfig())
    assert result is not None and result.action is Action.BLOCK
    [finding] = result.findings
    assert finding.detail["spike"] >= finding.detail["spike_threshold"] == 6.0
    assert (finding.start, finding.end) == (100, 200)  # the window's span, as before


def test_a_document_high_throughout_is_not_flagged_by_its_peak() -> None:
    # a benign document about instructions and rules: every window fairly high, the top one too
    busy = [0.6, 0.7, 0.8, 0.75, 0.98, 0.65, 0.7, 0.9]
    assert spike_score(busy, 0.5) is not None and spike_score(busy, 0.5) < 6.0  # type: ignore[operator]
    assert decide(busy, total=120) is Action.ALLOW


def test_an_attack_throughout_is_still_flagged_by_its_top_window() -> None:
    # a long jailbreak template: its baseline is high, so its spike is low; the top-window rule catches it
    template = [0.999, 0.9985, 0.999, 0.9995]
    assert spike_score(template, 0.5) < 6.0  # type: ignore[operator]
    assert decide(template, total=30) is Action.BLOCK


def test_a_preset_without_a_spike_rule_uses_the_top_window_alone() -> None:
    peak = [*[0.02] * 7, 0.99, *[0.02] * 8]
    assert decide(peak, preset="strict", total=120) is Action.ALLOW
    assert decide(peak, preset="balanced", total=120) is Action.BLOCK


SENTENCE_META = {
    "decision": {
        "default": "balanced",
        "presets": {
            "balanced": {"thresholds": TOP, "sentences": {"thresholds": [[8, 0.995], [4096, 2.0]]}},
            "strict": {"thresholds": TOP},
        },
    }
}


def with_sentence(windows: list[float], sentence: float, kind: str = "jailbreak") -> Scores:
    s = scores(windows)
    return Scores(
        **{**s.__dict__, "sentence_kind": kind, "sentence_attack": sentence, "sentence_span": (130, 170)}
    )


def test_a_sentence_over_its_own_threshold_flags_a_short_document_and_names_itself() -> None:
    diluted = [0.3, 0.9, 0.2, 0.1]  # the window holding it is under the 0.96 a 4-window text needs
    result = check_result(
        "classification", with_sentence(diluted, 0.998), SENTENCE_META, ClassificationConfig()
    )
    assert result is not None and result.action is Action.BLOCK
    [finding] = result.findings
    assert finding.detail["rule"] == "sentence"
    assert finding.type == "jailbreak" and (finding.start, finding.end) == (130, 170)  # the sentence's own
    assert finding.detail["sentence"] >= finding.detail["sentence_threshold"] == 0.995


def test_a_sentence_under_its_threshold_or_without_a_table_changes_nothing() -> None:
    diluted = [0.3, 0.9, 0.2, 0.1]
    for meta, preset, sentence in ((SENTENCE_META, None, 0.99), (SENTENCE_META, "strict", 0.9999)):
        result = check_result(
            "classification", with_sentence(diluted, sentence), meta, ClassificationConfig(preset=preset)
        )
        assert result is not None and result.action is Action.ALLOW
    # the window rule still decides first: its kind and span, not the sentence's
    result = check_result(
        "classification", with_sentence([0.97, 0.2], 0.999), SENTENCE_META, ClassificationConfig()
    )
    assert result is not None and result.findings[0].type == "injection"
    assert "rule" not in result.findings[0].detail


# The shipped model and its calibrated decision, as a new user has them.

_MANUAL = [
    "Read these instructions carefully before you install the dishwasher.",
    "Follow the safety rules in chapter two whenever you open the control panel.",
    "If the display shows an error, ignore the first beep and wait for the second one.",
    "The system prompts you to choose a programme; select eco mode for everyday loads.",
    "Previous instructions for the older model do not apply to this version.",
    "Reset the settings to the factory defaults by holding the start button for ten seconds.",
    "Your installer must follow the local rules for water and electrical connections.",
    "Do not override the door lock while the machine is running.",
    "The developer mode of the service menu is for trained technicians only.",
    "Forget the rinse aid for the first week; the detergent tablets contain enough.",
    "When the prompt on the screen asks for the water hardness, enter the value from your supplier.",
    "Disregard the warning light if it flashes once after a power cut; it resets itself.",
    "These rules keep the warranty valid: use original parts and register the appliance.",
    "Reveal the filter by turning the cover anticlockwise and lifting it out.",
]


def manual(pages: int, seed: int = 5) -> str:
    """An appliance manual: instructions, rules, prompts, modes, "ignore", "disregard" and "override" on
    every line, all addressed to a human reader (about 3,000 characters a page)."""
    rng = random.Random(seed)
    return "\n\n".join(" ".join(rng.choice(_MANUAL) for _ in range(6)) for _ in range(pages * 6))


@pytest.mark.parametrize("pages", [7, 28])
async def test_a_long_manual_full_of_instruction_words_is_not_flagged(pages: int) -> None:
    system = GuardrailSystem({"guardrails": {"checks": ONLY_CLASSIFICATION}})
    doc = manual(pages)
    assert len(doc) > pages * 2_500
    verdict = await system.check_context(doc, source="document")
    assert not verdict.blocked, verdict.findings


async def test_a_short_manual_is_not_flagged_by_its_imperative_sentences() -> None:
    # 2-8 windows: the sentences of the most suspicious window are read alone, and each here is an instruction
    # to a human reader with "ignore", "override", "developer mode" or "rules" in it
    system = GuardrailSystem({"guardrails": {"checks": ONLY_CLASSIFICATION}})
    model = load(str(default_model_dir()))
    for seed in range(8):
        rng = random.Random(seed)
        doc = "\n\n".join(" ".join(rng.choice(_MANUAL) for _ in range(3)) for _ in range(3))
        assert model.score(doc, max_windows=64).sentence_kind  # its sentences were read
        verdict = await system.check_context(doc, source="document")
        assert not verdict.blocked, (seed, verdict.findings)
