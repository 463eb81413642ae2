"""Sensitive-data detection with a real (tiny, built-here) transformers token-classification model,
including overlapping-chunk processing of long texts."""

from __future__ import annotations

import asyncio
import re
import threading

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


def _long_text(n: int = 400) -> str:
    return "".join(FILLER * (1 + i % 3) + ("quokka " if i % 2 else "zebra ") for i in range(n))


def _system(model: str, **sensitive: object) -> GuardrailSystem:
    checks = {"pii": {"enabled": False}, "classification": {"enabled": False}}
    sensitive_data = {"enabled": True, "model": model, "chunk_tokens": 16, "overlap_tokens": 4, **sensitive}
    return GuardrailSystem({"guardrails": {"checks": {**checks, "sensitive_data": sensitive_data}}})


def test_the_time_budget_scales_with_the_length_up_to_its_cap() -> None:
    pytest.importorskip("transformers", reason="needs the 'torch' extra")
    check = SensitiveDataCheck(SensitiveDataConfig(enabled=True, timeout_per_kb_s=2.0, max_timeout_s=100))
    assert check.timeout_for("", 5.0) == 5.0
    assert check.timeout_for("x" * 10 * 1024, 5.0) == 25.0  # 5 s + 2 s per 1,024 characters
    assert check.timeout_for("x" * 1024 * 1024, 5.0) == 100.0  # capped
    assert check.timeout_for("x", 200.0) == 200.0  # never below the configured timeout


@pytest.mark.ml
async def test_a_long_text_gets_a_verdict_within_its_scaled_budget(tiny_ner_model: str) -> None:
    text = _long_text()  # about 57 kB, 11,000 tokens
    # A fixed budget far too small for that much text: the check times out and the input rail blocks.
    fixed = _system(tiny_ner_model, timeout_s=0.001, timeout_per_kb_s=0)
    blocked = await fixed.check_input(text)
    assert blocked.blocked and "sensitive_data timed out after 0.001s" in (blocked.error or "")
    # The same base timeout with time per kB: the model reads every window and the secrets are masked.
    scaled = _system(tiny_ner_model, timeout_s=0.001, timeout_per_kb_s=30)
    verdict = await scaled.check_input(text)
    assert verdict.passed and verdict.action is Action.MASK
    assert len(verdict.findings) == len(secret_spans(text))


@pytest.mark.ml
async def test_a_timed_out_text_stops_its_worker_and_frees_the_model(tiny_ner_model: str) -> None:
    from stockade.guardrails.checks.sensitive_data.model import TokenClassifier

    classifier = TokenClassifier(tiny_ner_model, chunk_tokens=16, overlap_tokens=4)
    stop = threading.Event()
    stop.set()  # what run() does when its budget runs out
    assert classifier.detect(_long_text(), stop) == []  # returns at the first batch boundary
    # After a timeout in the rail, the next text is read normally (the model's lock was released).
    system = _system(tiny_ner_model, timeout_s=0.001, timeout_per_kb_s=0)
    assert (await system.check_input(_long_text())).blocked
    follow_up = await asyncio.wait_for(
        SensitiveDataCheck(SensitiveDataConfig(enabled=True, model=tiny_ner_model)).run("code is zebra", CTX),
        timeout=60,
    )
    assert [f.type for f in follow_up.findings] == ["SECRET"]
