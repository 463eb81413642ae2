"""Sensitive-data detection with a real (tiny, built-here) transformers token-classification model,
including overlapping-chunk processing of long texts."""

from __future__ import annotations

import re

import pytest

from stockade.guardrails import Action, GuardrailSystem
from stockade.guardrails.checks.base import CheckContext
from stockade.guardrails.checks.config import SensitiveDataConfig, Stage
from stockade.guardrails.checks.sensitive_data.check import SensitiveDataCheck
from stockade.guardrails.checks.sensitive_data.chunking import Entity, merge_entities, token_windows

CTX = CheckContext(stage=Stage.INPUT)
FILLER = "the quick brown fox jumps over the lazy dog "


def secret_spans(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in re.finditer(r"zebra|quokka", text)]


def test_windows_overlap_and_cover_every_token() -> None:
    offsets = [(i * 2, i * 2 + 1) for i in range(10)]
    windows = token_windows(offsets, chunk_tokens=4, overlap_tokens=1)
    assert windows == [(0, 7), (6, 13), (12, 19)]
    assert token_windows([], 4, 1) == []


def test_merge_joins_border_pieces_and_dedupes_overlap_copies() -> None:
    text = "aaaa bbbb cccc"
    ents = [Entity(0, 4, "X", 0.9), Entity(0, 4, "X", 0.8), Entity(5, 9, "X", 0.7), Entity(10, 14, "Y", 0.5)]
    assert merge_entities(text, ents) == [Entity(0, 9, "X", 0.9), Entity(10, 14, "Y", 0.5)]


@pytest.mark.ml
async def test_short_text_finds_entity_at_its_offsets(tiny_ner_model: str) -> None:
    check = SensitiveDataCheck(SensitiveDataConfig(enabled=True, model=tiny_ner_model))
    text = "please note my code is zebra for the team"
    result = await check.run(text, CTX)
    assert [(f.start, f.end, f.type) for f in result.findings] == [(23, 28, "SECRET")]
    assert result.action is Action.MASK


@pytest.mark.ml
async def test_long_text_is_chunked_and_offsets_map_back(tiny_ner_model: str) -> None:
    # ~4,000 tokens, far past the model's 64 positions; secrets at many places, some at window borders.
    parts = []
    for i in range(200):
        parts.append(FILLER * (1 + i % 3))
        parts.append("quokka " if i % 2 else "zebra ")
    text = "".join(parts)
    check = SensitiveDataCheck(
        SensitiveDataConfig(enabled=True, model=tiny_ner_model, chunk_tokens=16, overlap_tokens=4)
    )
    result = await check.run(text, CTX)
    assert [(f.start, f.end) for f in result.findings] == secret_spans(text)
    assert {text[f.start : f.end] for f in result.findings} == {"zebra", "quokka"}


@pytest.mark.ml
async def test_entity_cut_by_a_chunk_border_is_merged(tiny_ner_model: str) -> None:
    run = " ".join(["zebra"] * 12)  # 12 adjacent secret words: longer than one 8-token window
    text = f"my code is {run} ok"
    check = SensitiveDataCheck(
        SensitiveDataConfig(enabled=True, model=tiny_ner_model, chunk_tokens=8, overlap_tokens=2)
    )
    result = await check.run(text, CTX)
    assert [(f.start, f.end) for f in result.findings] == [(11, 11 + len(run))]


@pytest.mark.ml
async def test_blocking_and_label_filter_are_configurable(tiny_ner_model: str) -> None:
    cfg = {"pii": {"enabled": False}, "classification": {"enabled": False}}
    blocking = GuardrailSystem(
        {
            "guardrails": {
                "checks": {**cfg, "sensitive_data": {"enabled": True, "model": tiny_ner_model, "block": True}}
            }
        }
    )
    assert (await blocking.check_input("the code is zebra")).blocked
    masking = GuardrailSystem(
        {"guardrails": {"checks": {**cfg, "sensitive_data": {"enabled": True, "model": tiny_ner_model}}}}
    )
    verdict = await masking.check_output("the code is zebra")
    assert verdict.masked_text == "the code is <SECRET>"
    filtered = SensitiveDataCheck(SensitiveDataConfig(enabled=True, model=tiny_ner_model, labels=["EMAIL"]))
    assert (await filtered.run("the code is zebra", CTX)).findings == []


def test_overlap_must_be_smaller_than_chunk() -> None:
    with pytest.raises(ValueError):
        SensitiveDataConfig(chunk_tokens=16, overlap_tokens=16)
