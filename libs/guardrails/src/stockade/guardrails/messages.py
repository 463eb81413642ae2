"""The request and response shapes LLMRails and the policies share, independent of any provider.

A top-level module, owned by neither ``llm/`` nor ``policies/``: both read it, and ``llm/`` runs the policies.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Role = Literal["system", "user", "assistant", "tool"]


class ChatMessage(BaseModel):
    """One message of a conversation.

    External content (text from outside the user) is a message with role ``tool`` (a tool or function result;
    ``name`` says which tool) or any message with ``source`` set (a retrieved document, an e-mail, a web page,
    another agent's output). LLMRails checks it with ``check_context``; see :attr:`context_source`.
    """

    model_config = ConfigDict(frozen=True)

    role: Role = Field(description="system, user, assistant or tool ('function' is read as tool).")
    content: str = Field(description="The message text.")
    name: str | None = Field(default=None, description="The tool or function whose result this is.")
    source: str | None = Field(
        default=None,
        description="Where external text came from ('document', 'email', 'web', 'agent:planner'): the "
        "message is then checked as context whatever its role.",
    )

    @model_validator(mode="before")
    @classmethod
    def _provider_shapes(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        if data.get("role") == "function":  # OpenAI's legacy function result
            data = {**data, "role": "tool"}
        if isinstance(data.get("content"), list):
            raise ValueError(
                "content must be a string; content blocks are not carried: pass each tool result as its "
                "own message with role 'tool' (and name), each document with source"
            )
        return data

    @property
    def context_source(self) -> str | None:
        """The source a context check is given (``source``, else ``tool:<name>`` or ``tool`` for a tool result);
        None when the message is not external content."""
        if self.source is not None:
            return self.source
        if self.role == "tool":
            return f"tool:{self.name}" if self.name else "tool"
        return None


class ToolDefinition(BaseModel):
    """A tool the model may call (name, description, JSON schema of its arguments)."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})


class ChatRequest(BaseModel):
    """The full request context: what the token budget counts and what a provider sends."""

    system: str | None = Field(default=None, description="System prompt.")
    messages: list[ChatMessage] = Field(default_factory=list, description="Conversation, oldest first.")
    tools: list[ToolDefinition] = Field(
        default_factory=list, description="Tool definitions offered to the model."
    )
    max_tokens: int | None = Field(default=None, gt=0, description="Most output tokens; None: model default.")
    temperature: float | None = Field(default=None, ge=0, le=2, description="Sampling temperature.")

    @classmethod
    def from_prompt(cls, prompt: str, *, system: str | None = None) -> ChatRequest:
        return cls(system=system, messages=[ChatMessage(role="user", content=prompt)])

    def last_user_index(self) -> int | None:
        for i in range(len(self.messages) - 1, -1, -1):
            if self.messages[i].role == "user":
                return i
        return None


class TokenUsage(BaseModel):
    """Tokens of one call, as the provider reported them (or as counted when it did not)."""

    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


class ToolCall(BaseModel):
    """A tool call the model asked for. Authorize it with ``before_tool_call()`` before running it."""

    model_config = ConfigDict(frozen=True)

    id: str | None = Field(default=None, description="Provider's id of the call, when it gives one.")
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class ModelResponse(BaseModel):
    """What a provider returned for one request."""

    text: str
    tool_calls: list[ToolCall] = Field(default_factory=list, description="Tool calls the model asked for.")
    usage: TokenUsage = Field(default_factory=TokenUsage)
    model: str = ""
    finish_reason: str | None = None


def estimate_cost(
    usage: TokenUsage, input_price_per_mtok: Decimal | None, output_price_per_mtok: Decimal | None
) -> Decimal | None:
    """Cost of ``usage`` from prices per million tokens; None when a price is unknown."""
    if input_price_per_mtok is None or output_price_per_mtok is None:
        return None
    million = Decimal(1_000_000)
    return (
        Decimal(usage.input_tokens) * input_price_per_mtok
        + Decimal(usage.output_tokens) * output_price_per_mtok
    ) / million
