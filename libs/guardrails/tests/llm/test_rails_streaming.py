"""LLMRails.astream(): output rails run before any text is released; a bounded window is held back."""

from __future__ import annotations

from typing import Any

from stockade.guardrails import Action
from stockade.guardrails.llm.rails import LLMRails
from stockade.guardrails.system import GuardrailSystem
from stockade.guardrails.testing import FakeModelProvider
from stockade.guardrails.verdict import Verdict

CLEAN = " ".join(f"word{i}" for i in range(120))


def _spy(system: GuardrailSystem) -> list[str]:
    """Record every text the output rail checked (and passed or masked) before it returns."""
    checked: list[str] = []
    real = system.check_output

    async def check_output(text: str, **kw: Any) -> Verdict:
        verdict = await real(text, **kw)
        if verdict.action is not Action.BLOCK:
            checked.append(text)
        return verdict

    system.check_output = check_output  # type: ignore[method-assign]
    return checked


async def test_clean_stream_releases_everything_and_only_checked_text(system: GuardrailSystem) -> None:
    checked = _spy(system)
    rails = LLMRails(
        provider=FakeModelProvider([CLEAN], chunk_chars=7), system=system, stream_window_chars=32
    )
    stream = rails.astream("go")
    released = ""
    async for piece in stream:
        released += piece
        # everything released so far lies inside a text an output check has already passed
        assert any(c.startswith(released) for c in checked)
    assert released == CLEAN
    assert stream.result is not None and stream.result.passed and stream.result.text == CLEAN
    assert (
        stream.window is not None and stream.window.checks_run > 3
    )  # checked along the way, not only at the end
    assert stream.result.usage.output_tokens > 0


async def test_blocked_word_late_in_stream_is_never_released(system: GuardrailSystem) -> None:
    reply = CLEAN + " and now an exploit follows " + CLEAN
    rails = LLMRails(
        provider=FakeModelProvider([reply], chunk_chars=3), system=system, stream_window_chars=32
    )
    stream = rails.astream("go")
    released = "".join([piece async for piece in stream])
    assert "expl" not in released and released and CLEAN.startswith(released)
    result = stream.result
    assert result is not None and not result.passed and result.blocked_at == "output"
    assert result.verdicts["output"].blocked


async def test_held_back_text_stays_bounded(system: GuardrailSystem) -> None:
    rails = LLMRails(
        provider=FakeModelProvider([CLEAN * 3], chunk_chars=5), system=system, stream_window_chars=20
    )
    stream = rails.astream("go")
    most_held = 0
    async for _ in stream:
        assert stream.window is not None
        most_held = max(most_held, stream.window.held_back)
    assert 0 < most_held <= 2 * 20 + 5


async def test_masked_stream_releases_masked_text(system: GuardrailSystem) -> None:
    reply = CLEAN + " the secret is out " + CLEAN
    rails = LLMRails(
        provider=FakeModelProvider([reply], chunk_chars=4), system=system, stream_window_chars=32
    )
    stream = rails.astream("go")
    released = "".join([piece async for piece in stream])
    assert "the <secret> is out" in released and " secret " not in released
    assert stream.result is not None and stream.result.action is Action.MASK
    assert stream.result.error == "output masked: fake found secret (1)"


async def test_stream_blocked_at_input_calls_no_model(system: GuardrailSystem) -> None:
    provider = FakeModelProvider(["never"])
    stream = LLMRails(provider=provider, system=system).astream("try a jailbreak")
    assert [piece async for piece in stream] == []
    assert stream.result is not None and stream.result.blocked_at == "input" and provider.calls == 0


def test_sync_iteration_applies_the_same_rails(system: GuardrailSystem) -> None:
    reply = CLEAN + " and now an exploit follows"
    rails = LLMRails(
        provider=FakeModelProvider([CLEAN, reply], chunk_chars=6), system=system, stream_window_chars=32
    )
    clean = rails.stream("go")
    assert "".join(clean) == CLEAN and clean.result is not None and clean.result.passed
    blocked = rails.stream("go")
    released = "".join(blocked)
    assert "expl" not in released and blocked.result is not None and blocked.result.blocked_at == "output"
