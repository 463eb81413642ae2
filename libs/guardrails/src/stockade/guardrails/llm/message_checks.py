"""The content part of LLMRails' input rails: every message of a request that is new is checked.

- A ``user`` message is checked with ``check_input``.
- External content, a message whose :attr:`~stockade.guardrails.messages.ChatMessage.context_source` is set
  (role ``tool``, or any message with ``source``), is checked with ``check_context(source=...)``.
- ``system`` and ``assistant`` messages without a source are not checked: the system prompt is the
  application's, and assistant turns are the model's own replies (output rails checked them when they came
  through LLMRails).

"New" means not remembered in :class:`~stockade.guardrails.llm.checked_memory.CheckedMessages` for the call's
session (``session_id``, else ``run_id``; with neither, every message is checked on every call). Messages are
checked one at a time, oldest first (concurrent checks of many long messages would queue for the same worker
threads and run into their timeouts); the first block stops the call. A mask replaces the text of the message it
came from. A message is remembered only when it passed and every check could run, so a check that failed open is
tried again on the next call.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field

from stockade.guardrails.events import EventRecorder
from stockade.guardrails.llm.checked_memory import CheckedMessages
from stockade.guardrails.messages import ChatRequest
from stockade.guardrails.verdict import Action, Verdict


class ContentRails(Protocol):
    """What LLMRails needs from GuardrailSystem: the input, context and output content checks."""

    recorder: EventRecorder

    async def check_input(
        self, text: str, *, session_id: str | None = None, metadata: dict[str, Any] | None = None
    ) -> Verdict: ...

    async def check_context(
        self,
        text: str,
        *,
        source: str | None,
        session_id: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> Verdict: ...

    async def check_output(
        self, text: str, *, session_id: str | None = None, metadata: dict[str, Any] | None = None
    ) -> Verdict: ...


class MessageCheck(BaseModel):
    """The check of one message of the request."""

    index: int = Field(
        description="Position of the message in the request's messages (oldest first, from 0)."
    )
    role: str = Field(description="The message's role.")
    source: str | None = Field(default=None, description="Context source ('tool:search_web', 'document').")
    stage: Literal["input", "context"] = Field(description="check_input or check_context.")
    verdict: Verdict

    def describe(self) -> str:
        """``message 2 (tool, tool:search_web)``: which message, without its text."""
        where = self.role if self.source is None else f"{self.role}, {self.source}"
        return f"message {self.index} ({where})"


@dataclass
class MessageScreening:
    """What the message checks of one request found; ``request`` is what may be sent (masks applied)."""

    request: ChatRequest
    checks: list[MessageCheck] = field(default_factory=list)
    blocked: MessageCheck | None = None
    already_checked: int = 0

    def verdicts(self) -> dict[str, Verdict]:
        """One verdict per stage that ran: the blocking one, else the strongest (the newest among equals)."""
        out: dict[str, Verdict] = {}
        for check in self.checks:
            current = out.get(check.stage)
            if current is None or check.verdict.action.severity >= current.action.severity:
                out[check.stage] = check.verdict
        return out


async def check_messages(
    system: ContentRails,
    request: ChatRequest,
    memory: CheckedMessages,
    *,
    session_id: str | None,
    run_id: str | None,
    metadata: dict[str, Any] | None,
) -> MessageScreening:
    """Check every new user message and every new piece of external content of ``request``."""
    session = session_id if session_id is not None else run_id
    messages = list(request.messages)
    screening = MessageScreening(request=request)
    for index, message in enumerate(request.messages):
        source = message.context_source
        if source is None and message.role != "user":
            continue
        remembered = memory.get(session, message)
        if remembered is not None:
            screening.already_checked += 1
            if remembered.masked is not None:
                messages[index] = message.model_copy(update={"content": remembered.masked})
            continue
        if source is None:
            verdict = await system.check_input(message.content, session_id=session_id, metadata=metadata)
        else:
            verdict = await system.check_context(
                message.content, source=source, session_id=session_id, metadata=metadata
            )
        check = MessageCheck(
            index=index,
            role=message.role,
            source=source,
            stage="input" if source is None else "context",
            verdict=verdict,
        )
        screening.checks.append(check)
        if verdict.action is Action.BLOCK:
            screening.blocked = check
            return screening
        masked = verdict.masked_text if verdict.action is Action.MASK else None
        if masked is not None:
            messages[index] = message.model_copy(update={"content": masked})
        if not any(r.error for r in verdict.results):
            memory.remember(session, message, masked)
    screening.request = request.model_copy(update={"messages": messages})
    return screening
