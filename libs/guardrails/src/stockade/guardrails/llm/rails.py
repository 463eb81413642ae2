"""LLMRails (spec 1 and 3): input rails, then the model, then output rails, then one aggregated result.

- Input rails: the content checks of :class:`~stockade.guardrails.system.GuardrailSystem` on every message new
  in the session: user messages with ``check_input``, tool results and other external content with
  ``check_context`` (see :mod:`~stockade.guardrails.llm.message_checks`; a mask replaces the text of its
  message before it is sent), then the token budget over the full request. A block at either means the model
  is **not** called.
- Model: the configured provider (OpenAI, Azure OpenAI, Anthropic, Gemini, Bedrock) or any
  :class:`~stockade.guardrails.llm.providers.base.ModelProvider`.
- Output rails: the content checks on the reply; a block withholds the reply, a mask returns the masked text.
- Result: :class:`GenerationResult` with per-check verdicts, timings, token usage and a cost estimate; one
  GENERATE event is recorded per call.

Streaming (:meth:`LLMRails.astream`, :class:`~stockade.guardrails.llm.stream.RailsStream`) releases text only
after output checks covered it (see ``streaming``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from stockade.guardrails.config import GuardrailsConfig, load_config
from stockade.guardrails.errors import ConfigError, GuardrailError
from stockade.guardrails.events import EventKind, EventRecorder, GuardrailEvent, NullRecorder
from stockade.guardrails.llm.catalogue import CatalogueClient
from stockade.guardrails.llm.checked_memory import CheckedMessages
from stockade.guardrails.llm.config import ModelConfig
from stockade.guardrails.llm.message_checks import ContentRails, check_messages
from stockade.guardrails.llm.messages import (
    ChatMessage,
    ChatRequest,
    TokenUsage,
    ToolDefinition,
    estimate_cost,
)
from stockade.guardrails.llm.providers import ModelProvider, ModelProviderError, build_provider
from stockade.guardrails.llm.result import GenerationResult
from stockade.guardrails.llm.stream import RailsStream
from stockade.guardrails.policies.engine import PolicyEngine
from stockade.guardrails.storage.hook import GuardrailsStorageHook
from stockade.guardrails.storage.result import FlushResult
from stockade.guardrails.verdict import Action


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1e3


class LLMRails:
    """Model configuration and invocation with input and output rails around every call."""

    def __init__(
        self,
        config: GuardrailsConfig | dict[str, Any] | str | Path | None = None,
        *,
        model: str | None = None,
        provider: ModelProvider | None = None,
        system: ContentRails | None = None,
        policies: PolicyEngine | None = None,
        recorder: EventRecorder | None = None,
        stream_window_chars: int = 256,
        count_requests: bool = False,
        checked_messages: CheckedMessages | None = None,
        catalogue: CatalogueClient | None = None,
    ) -> None:
        """``count_requests``: each generate() with a session_id also counts against the session's request
        quota (``before_request()``), for agents that do not call that hook themselves.
        ``checked_messages``: the memory of messages already checked per session (default: 65,536 messages).
        ``catalogue``: model-api's catalogue (prices, context window); when it has no answer the YAML prices
        of the model configuration apply."""
        if (
            config is None
            and system is not None
            and isinstance(getattr(system, "config", None), GuardrailsConfig)
        ):
            config = system.config  # type: ignore[attr-defined]
        self.config = load_config(config)
        self.model_config = self._select_model(model, required=provider is None)
        self.provider: ModelProvider = provider or build_provider(self.model_config)  # type: ignore[arg-type]
        if system is None:
            from stockade.guardrails.system import GuardrailSystem

            system = GuardrailSystem(self.config, recorder=recorder)
        self.system: ContentRails = system
        # Our own engine counts with the model's encoding and records to the system's (current) recorder.
        self._own_policies = policies is None
        self.policies = policies or PolicyEngine(self.config, model=self.provider.model)
        self.count_requests = count_requests
        self.stream_window_chars = stream_window_chars
        self.checked_messages = checked_messages if checked_messages is not None else CheckedMessages()
        self.catalogue = catalogue

    def _select_model(self, name: str | None, *, required: bool) -> ModelConfig | None:
        models = self.config.models
        if name is None:
            if not models and required:
                raise ConfigError("models: no model configured and no provider given")
            return models[0] if models else None
        for m in models:
            if name in (m.name, m.model):
                return m
        raise ConfigError(f"models: no model named {name!r}")

    # -- storage lifecycle (spec 3): wired automatically by GuardrailSystem when guardrails.storage.enabled ----
    @property
    def storage(self) -> GuardrailsStorageHook | None:
        """The system's storage hook (None for a custom ContentRails without one)."""
        hook = getattr(self.system, "storage", None)
        return hook if isinstance(hook, GuardrailsStorageHook) else None

    def begin_run(self, run_id: str | None = None, **kwargs: Any) -> str:
        """Open a storage run (see GuardrailSystem.begin_run); generate() events land in it."""
        if self.storage is None:
            raise GuardrailError("this LLMRails' system has no storage hook")
        return self.storage.begin_run(run_id, **kwargs)

    async def end_run(self, run_id: str | None = None) -> FlushResult:
        """Close the run and flush its events (see GuardrailSystem.end_run)."""
        if self.storage is None:
            raise GuardrailError("this LLMRails' system has no storage hook")
        return await self.storage.end_run(run_id)

    @property
    def recorder(self) -> EventRecorder:
        return getattr(self.system, "recorder", None) or NullRecorder()

    # -- building requests ---------------------------------------------------------------------------------
    @staticmethod
    def build_request(
        prompt: str | Sequence[ChatMessage | dict[str, Any]] | ChatRequest,
        *,
        system_prompt: str | None = None,
        tools: Sequence[ToolDefinition | dict[str, Any]] | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> ChatRequest:
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

    # -- generate ------------------------------------------------------------------------------------------
    async def agenerate(
        self,
        prompt: str | Sequence[ChatMessage | dict[str, Any]] | ChatRequest,
        *,
        system_prompt: str | None = None,
        tools: Sequence[ToolDefinition | dict[str, Any]] | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        session_id: str | None = None,
        run_id: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> GenerationResult:
        """Run input rails, the model (async SDK client), output rails; return the aggregated result."""
        request = self.build_request(
            prompt, system_prompt=system_prompt, tools=tools, max_tokens=max_tokens, temperature=temperature
        )
        return await self._generate(request, session_id, run_id, metadata, use_thread=False)

    def generate(
        self,
        prompt: str | Sequence[ChatMessage | dict[str, Any]] | ChatRequest,
        *,
        system_prompt: str | None = None,
        tools: Sequence[ToolDefinition | dict[str, Any]] | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        session_id: str | None = None,
        run_id: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> GenerationResult:
        """Synchronous generate: the model is called through the provider's sync SDK client."""
        request = self.build_request(
            prompt, system_prompt=system_prompt, tools=tools, max_tokens=max_tokens, temperature=temperature
        )
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self._generate(request, session_id, run_id, metadata, use_thread=True))
        raise GuardrailError("generate() was called inside a running event loop; use 'await agenerate(...)'")

    async def _input_rails(
        self,
        request: ChatRequest,
        result: GenerationResult,
        session_id: str | None,
        run_id: str | None,
        metadata: dict[str, Any] | None,
    ) -> ChatRequest | None:
        """Content checks of the new messages, then the token budget. Returns the request to send, or None."""
        start = time.perf_counter()
        screening = await check_messages(
            self.system,
            request,
            self.checked_messages,
            session_id=session_id,
            run_id=run_id,
            metadata=metadata,
        )
        request = screening.request
        result.verdicts.update(screening.verdicts())
        result.message_checks = screening.checks
        result.messages_already_checked = screening.already_checked
        result.timings_ms["input_rails"] = _ms(start)
        if (blocked := screening.blocked) is not None:
            result.blocked_message = blocked
            reason = blocked.verdict.error or f"{blocked.stage} rails blocked the request"
            self._block(result, "input", f"{blocked.describe()}: {reason}")
            return None
        if self._own_policies:
            self.policies.recorder = self.recorder
        if self.count_requests and session_id is not None:
            start = time.perf_counter()
            quota = await self.policies.before_request(session_id, run_id=run_id)
            result.timings_ms["rate_limit"] = _ms(start)
            result.verdicts["rate_limit"] = quota
            if quota.action is Action.BLOCK:
                self._block(result, "input", quota.error or "request quota exceeded")
                return None
        start = time.perf_counter()
        budget, tokens = self.policies.assess_token_budget(request, session_id=session_id, run_id=run_id)
        result.timings_ms["token_budget"] = _ms(start)
        result.verdicts["token_budget"] = budget
        result.estimated_input_tokens = tokens
        if budget.action is Action.BLOCK:
            self._block(result, "input", budget.error or "token budget exceeded")
            return None
        window = await self._context_window()
        if window is not None and tokens > window:
            self._block(
                result,
                "input",
                f"the request ({tokens} tokens) exceeds the model's context window ({window})",
            )
            return None
        return request

    async def _context_window(self) -> int | None:
        """The model's context window: the catalogue's when it knows one, else the YAML configuration's."""
        mc = self.model_config
        if mc is None:
            return None
        if self.catalogue is not None:
            entry = await self.catalogue.get(mc.provider, mc.model)
            if entry is not None and entry.context_window is not None:
                return entry.context_window
        return mc.context_window

    @staticmethod
    def _block(result: GenerationResult, stage: str, reason: str) -> None:
        result.passed, result.action, result.text, result.error = False, Action.BLOCK, None, reason
        result.blocked_at = "input" if stage == "input" else "output"

    def _new_result(self) -> GenerationResult:
        return GenerationResult(
            text=None,
            passed=True,
            action=Action.ALLOW,
            provider=self.provider.provider,
            model=self.provider.model,
        )

    async def _generate(
        self,
        request: ChatRequest,
        session_id: str | None,
        run_id: str | None,
        metadata: dict[str, Any] | None,
        *,
        use_thread: bool,
    ) -> GenerationResult:
        total = time.perf_counter()
        result = self._new_result()
        try:
            sendable = await self._input_rails(request, result, session_id, run_id, metadata)
            if sendable is None:
                return result
            prices = await self._prices_in_force()
            start = time.perf_counter()
            result.model_called = True
            try:
                if use_thread:
                    response = await asyncio.to_thread(self.provider.complete, sendable)
                else:
                    response = await self.provider.acomplete(sendable)
            except ModelProviderError as exc:
                result.passed, result.error = False, str(exc)
                raise
            result.timings_ms["model"] = _ms(start)
            self._account(result, response.usage, run_id, prices)
            await self._output_rails(response.text, result, session_id, metadata)
            if result.blocked_at is None:
                result.tool_calls = list(response.tool_calls)
            return result
        finally:
            self._finish(result, total, session_id, run_id)

    async def _output_rails(
        self, text: str, result: GenerationResult, session_id: str | None, metadata: dict[str, Any] | None
    ) -> None:
        start = time.perf_counter()
        verdict = await self.system.check_output(text, session_id=session_id, metadata=metadata)
        result.timings_ms["output_rails"] = _ms(start)
        result.verdicts["output"] = verdict
        if verdict.action is Action.BLOCK:
            self._block(result, "output", verdict.error or "output rails blocked the reply")
        elif verdict.action is Action.MASK and verdict.masked_text is not None:
            result.text, result.error = verdict.masked_text, verdict.error  # spec 3: mask and say so
        else:
            result.text = text

    async def _prices_in_force(self) -> tuple[Decimal | None, Decimal | None]:
        """Input and output price per million tokens when the call is made: the catalogue's, else YAML's."""
        mc = self.model_config
        if mc is None:
            return None, None
        if self.catalogue is not None:
            entry = await self.catalogue.get(mc.provider, mc.model)
            if entry is not None:
                prices = entry.prices_at(datetime.now(UTC))  # the price in force when the call is made
                if None not in prices:
                    return prices
        return mc.input_price_per_mtok, mc.output_price_per_mtok

    def _account(
        self,
        result: GenerationResult,
        usage: TokenUsage,
        run_id: str | None,
        prices: tuple[Decimal | None, Decimal | None] | None = None,
    ) -> None:
        if usage.input_tokens == 0:
            usage = usage.model_copy(update={"input_tokens": result.estimated_input_tokens})
        result.usage = usage
        # The run was charged the counted input before the call; settle it to what the provider reported.
        correction = max(0, usage.input_tokens - result.estimated_input_tokens)
        self.policies.record_output_tokens(run_id, usage.output_tokens + correction)
        mc = self.model_config
        if prices is not None:
            result.cost = estimate_cost(usage, *prices)
        elif mc is not None:
            result.cost = estimate_cost(usage, mc.input_price_per_mtok, mc.output_price_per_mtok)

    def _finish(
        self, result: GenerationResult, total: float, session_id: str | None, run_id: str | None
    ) -> None:
        result.timings_ms["total"] = _ms(total)
        if result.passed:
            result.action = Action.strongest([v.action for v in result.verdicts.values()])
        self.recorder.record(
            GuardrailEvent(
                kind=EventKind.GENERATE,
                name="generate",
                session_id=session_id,
                run_id=run_id,
                action=result.action.value,
                payload=result.event_payload(),
            )
        )

    async def aclose(self) -> None:
        """Close the provider's HTTP clients and, when this object built it, the policy engine's store."""
        await self.provider.aclose()
        if self._own_policies:
            await self.policies.close()

    # -- streaming -----------------------------------------------------------------------------------------
    def astream(
        self,
        prompt: str | Sequence[ChatMessage | dict[str, Any]] | ChatRequest,
        *,
        system_prompt: str | None = None,
        tools: Sequence[ToolDefinition | dict[str, Any]] | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        session_id: str | None = None,
        run_id: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> RailsStream:
        """Stream the reply; text is released only after output rails covered it. See :class:`RailsStream`."""
        request = self.build_request(
            prompt, system_prompt=system_prompt, tools=tools, max_tokens=max_tokens, temperature=temperature
        )
        return RailsStream(self, request, session_id, run_id, metadata)

    stream = astream  # the same object iterates with ``for`` outside an event loop
