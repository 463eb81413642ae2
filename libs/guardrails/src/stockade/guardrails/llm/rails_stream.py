"""RailsStream: LLMRails.astream()'s iterator. Input rails, then the model's stream through a held-back window."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, AsyncIterator, Iterator

from stockade.guardrails.errors import GuardrailError
from stockade.guardrails.llm import steps
from stockade.guardrails.llm.call import Call
from stockade.guardrails.llm.held_back import HeldBackWindow
from stockade.guardrails.llm.providers.base import StreamChunk
from stockade.guardrails.llm.result import GenerationResult
from stockade.guardrails.messages import TokenUsage
from stockade.guardrails.verdict import Action, Verdict


async def _pulled(chunks: Iterator[StreamChunk]) -> AsyncGenerator[StreamChunk, None]:
    """A sync chunk iterator as an async one; each next() runs in a worker thread."""
    try:
        while (chunk := await asyncio.to_thread(next, chunks, None)) is not None:
            yield chunk
    finally:
        close = getattr(chunks, "close", None)
        if close is not None:
            await asyncio.to_thread(close)


class RailsStream:
    """Iterator (``async for``, or ``for`` outside an event loop) of released text; ``result`` holds the aggregated
    result once iteration ended."""

    def __init__(self, rails: steps.RailsParts, call: Call, window_chars: int) -> None:
        self._rails, self._call, self._window_chars = rails, call, window_chars
        self.result: GenerationResult | None = None
        self.window: HeldBackWindow | None = None

    def __aiter__(self) -> AsyncIterator[str]:
        return self._run()

    def __iter__(self) -> Iterator[str]:
        """Synchronous iteration, outside any running event loop: drives the stream on a private loop."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise GuardrailError(
                "a RailsStream inside a running event loop must be consumed with 'async for'"
            )
        loop = asyncio.new_event_loop()
        agen = self._run(sync_model=True)
        try:
            while True:
                try:
                    yield loop.run_until_complete(agen.__anext__())
                except StopAsyncIteration:
                    return
        finally:
            loop.run_until_complete(agen.aclose())
            loop.run_until_complete(loop.shutdown_default_executor())
            loop.close()

    async def _run(self, *, sync_model: bool = False) -> AsyncGenerator[str, None]:
        rails, call = self._rails, self._call
        total = time.perf_counter()
        result = steps.new_result(rails)
        self.result = result
        try:
            sendable = await steps.input_rails(rails, call, result)
            if sendable is None:
                return

            async def check(text: str) -> Verdict:
                return await rails.system.check_output(
                    text, session_id=call.session_id, metadata=call.metadata
                )

            window = self.window = HeldBackWindow(check, self._window_chars)
            usage = TokenUsage()
            # On the sync iteration's private loop the catalogue answers from its cache only (else YAML).
            prices = await steps.prices_in_force(rails)
            start = time.perf_counter()
            result.model_called = True
            # Sync iteration runs on a private loop: use the provider's sync client (its async one may hold
            # connections bound to another loop), pulling each chunk in a worker thread.
            chunks = (
                _pulled(rails.provider.stream(sendable)) if sync_model else rails.provider.astream(sendable)
            )
            try:
                async for chunk in chunks:
                    if chunk.usage is not None:
                        usage = chunk.usage
                    if chunk.text:
                        released = await window.feed(chunk.text)
                        if window.blocked:
                            break
                        if released:
                            yield released
            finally:
                close = getattr(chunks, "aclose", None)
                if close is not None:  # stop the provider's stream (and its HTTP response) at once
                    await close()
            result.timings_ms["model"] = steps.ms_since(start)
            if not window.blocked:
                rest = await window.finish()
                if rest:
                    yield rest
            if usage.output_tokens == 0 and window.received:
                usage = usage.model_copy(
                    update={"output_tokens": rails.policies.budget.counter.count_text(window.received)}
                )
            steps.account(rails, result, usage, call.run_id, prices)
            if window.verdict is not None:
                result.verdicts["output"] = window.verdict
            if window.blocked:
                steps.block(
                    result, "output", (window.verdict and window.verdict.error) or "output rails blocked"
                )
                result.text = window.released or None
            else:
                result.text = window.released
                if window.verdict is not None and window.verdict.action is Action.MASK:
                    result.error = window.verdict.error
        finally:
            steps.finish(rails, call, result, total)
