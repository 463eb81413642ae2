"""One generation call's options, declared once for ``generate``, ``agenerate`` and ``astream``.

:class:`GenerateOptions` types the keywords of those three methods (``**options: Unpack[GenerateOptions]``);
:meth:`Call.of` turns a prompt and its options into the request to send and who the call is for.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

from stockade.guardrails.messages import ChatMessage, ChatRequest, ToolDefinition

Prompt = str | Sequence[ChatMessage | dict[str, Any]] | ChatRequest
"""A user message, a list of messages (objects or dicts), or a whole request (its options then ignored)."""


class GenerateOptions(TypedDict, total=False):
    """The keywords of a generation call; every one is optional."""

    system_prompt: str | None
    tools: Sequence[ToolDefinition | dict[str, Any]] | None
    max_tokens: int | None
    temperature: float | None
    session_id: str | None
    run_id: str | None
    metadata: dict[str, Any] | None


def build_request(
    prompt: Prompt,
    *,
    system_prompt: str | None = None,
    tools: Sequence[ToolDefinition | dict[str, Any]] | None = None,
    max_tokens: int | None = None,
    temperature: float | None = None,
) -> ChatRequest:
    """The request for a prompt (a :class:`ChatRequest` is returned as it is)."""
    if isinstance(prompt, ChatRequest):
        return prompt
    if isinstance(prompt, str):
        messages = [ChatMessage(role="user", content=prompt)]
    else:
        messages = [m if isinstance(m, ChatMessage) else ChatMessage.model_validate(m) for m in prompt]
    tool_defs = [
        t if isinstance(t, ToolDefinition) else ToolDefinition.model_validate(t) for t in tools or []
    ]
    return ChatRequest(
        system=system_prompt,
        messages=messages,
        tools=tool_defs,
        max_tokens=max_tokens,
        temperature=temperature,
    )


@dataclass(frozen=True)
class Call:
    """A generation call: the request to check and send, and the session, run and metadata it belongs to."""

    request: ChatRequest
    session_id: str | None = None
    run_id: str | None = None
    metadata: dict[str, Any] | None = None

    @classmethod
    def of(cls, prompt: Prompt, options: GenerateOptions) -> Call:
        """Build the call; an unknown option is a TypeError, as an unknown keyword argument would be."""
        unknown = sorted(set(options) - GenerateOptions.__optional_keys__)
        if unknown:
            raise TypeError(f"unexpected keyword argument {unknown[0]!r}")
        request = build_request(
            prompt,
            system_prompt=options.get("system_prompt"),
            tools=options.get("tools"),
            max_tokens=options.get("max_tokens"),
            temperature=options.get("temperature"),
        )
        return cls(request, options.get("session_id"), options.get("run_id"), options.get("metadata"))
