"""Output rails over a stream: no text is released before an output check has covered it.

:class:`HeldBackWindow` accumulates the streamed reply and runs the output check over everything received so
far each time ``2 * window`` unchecked characters have piled up. After a passing check it releases all but the
last ``window`` characters, so anything a check can only recognise whole (a secret, an e-mail address) that is
at most ``window`` characters long is seen complete before any part of it leaves. A mask is applied to the
released text; a block stops the stream. At the end the whole reply is checked once more and the rest released.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from stockade.guardrails.verdict import Action, Verdict

OutputCheck = Callable[[str], Awaitable[Verdict]]


class HeldBackWindow:
    """Releases streamed text only after an output check over it passed (or masked it)."""

    def __init__(self, check: OutputCheck, window_chars: int = 256) -> None:
        if window_chars < 1:
            raise ValueError("window_chars must be at least 1")
        self._check, self.window = check, window_chars
        self.received = ""
        self.released = ""
        self._checked_len = 0
        self.verdict: Verdict | None = None
        self.blocked = False
        self.checks_run = 0

    @property
    def held_back(self) -> int:
        """Characters received but not released."""
        return len(self.received) - len(self.released) if not self.blocked else len(self.received)

    async def feed(self, text: str) -> str:
        """Add streamed text; return the text that may be released now (often empty)."""
        if self.blocked:
            return ""
        self.received += text
        if len(self.received) - self._checked_len < 2 * self.window:
            return ""
        return await self._release(final=False)

    async def finish(self) -> str:
        """Check the complete reply; return whatever remains to release (empty when blocked)."""
        if self.blocked:
            return ""
        return await self._release(final=True)

    async def _release(self, *, final: bool) -> str:
        verdict = await self._check(self.received)
        self.checks_run += 1
        self._checked_len = len(self.received)
        self.verdict = verdict
        if verdict.action is Action.BLOCK:
            self.blocked = True
            return ""
        out = (
            verdict.masked_text
            if verdict.action is Action.MASK and verdict.masked_text is not None
            else self.received
        )
        if not out.startswith(self.released):
            # A mask reached into text already released: it cannot be taken back, so stop here (fail closed).
            self.blocked = True
            self.verdict = verdict.model_copy(
                update={
                    "action": Action.BLOCK,
                    "passed": False,
                    "error": "mask reached already released text",
                }
            )
            return ""
        end = len(out) if final else max(len(self.released), len(out) - self.window)
        new = out[len(self.released) : end]
        self.released += new
        return new
