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

Streaming (:meth:`LLMRails.astream`, :class:`~stockade.guardrails.llm.rails_stream.RailsStream`) releases text only
after output checks covered it (see ``streaming``). Both run the steps of :mod:`~stockade.guardrails.llm.steps`;
the keywords of a call are :class:`~stockade.guardrails.llm.call.GenerateOptions`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Unpack

from stockade.guardrails.config import GuardrailsConfig, load_config
from stockade.guardrails.errors import ConfigError, GuardrailError
from stockade.guardrails.events import EventRecorder, NullRecorder
from stockade.guardrails.llm import steps
from stockade.guardrails.llm.call import Call, GenerateOptions, Prompt, build_request
from stockade.guardrails.llm.catalogue import CatalogueClient
from stockade.guardrails.llm.checked_memory import CheckedMessages
from stockade.guardrails.llm.config import ModelConfig
from stockade.guardrails.llm.message_checks import ContentRails
from stockade.guardrails.llm.providers import ModelProvider, ModelProviderError, build_provider
from stockade.guardrails.llm.rails_stream import RailsStream
from stockade.guardrails.llm.result import GenerationResult
from stockade.guardrails.messages import ChatMessage, ChatRequest, ToolDefinition
from stockade.guardrails.policies.engine import PolicyEngine
from stockade.guardrails.storage.hook import GuardrailsStorageHook
from stockade.guardrails.storage.result import FlushResult


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
        self.owns_policies = policies is None
        self.policies = policies or PolicyEngine(self.config, model=self.provider.model)
        if self.storage is not None:  # per-run token totals follow the system's begin_run()/end_run()
            self.storage.add_run_listener(self.policies)
        self.count_requests = count_requests
        self.stream_window_chars = stream_window_chars
        self.checked_messages = checked_messages if checked_messages is not None else CheckedMessages()
        self.catalogue = catalogue

    @classmethod
    def from_platform(
        cls, project_id: str, policy_name: str, *, platform: dict[str, Any] | None = None, **options: Any
    ) -> LLMRails:
        """Rails on a guardrail policy published on the platform: ``GuardrailSystem.from_platform(project_id,
        policy_name, **platform)`` (``api_key``, ``settings``, ``client``, ``cache_dir``, ``recorder``) as the
        system, and ``options`` as for ``LLMRails(...)`` (``model``, ``provider``, ...). The rails' checks follow
        every activation; the model settings and the policies engine are those of the version at start."""
        from stockade.guardrails.system import GuardrailSystem

        system = GuardrailSystem.from_platform(project_id, policy_name, **(platform or {}))
        return cls(system=system, **options)

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
        return build_request(
            prompt, system_prompt=system_prompt, tools=tools, max_tokens=max_tokens, temperature=temperature
        )

    # -- generate ------------------------------------------------------------------------------------------
    def _call(self, prompt: Prompt, options: GenerateOptions) -> Call:
        """The call; without ``run_id`` it belongs to the run begin_run() opened in this context, if any."""
        call = Call.of(prompt, options)
        current = self.storage.current_run_id if self.storage is not None else None
        return call if call.run_id is not None or current is None else replace(call, run_id=current)

    async def agenerate(self, prompt: Prompt, **options: Unpack[GenerateOptions]) -> GenerationResult:
        """Run input rails, the model (async SDK client), output rails; return the aggregated result."""
        return await self._generate(self._call(prompt, options), use_thread=False)

    def generate(self, prompt: Prompt, **options: Unpack[GenerateOptions]) -> GenerationResult:
        """Synchronous generate: the model is called through the provider's sync SDK client."""
        call = self._call(prompt, options)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self._generate(call, use_thread=True))
        raise GuardrailError("generate() was called inside a running event loop; use 'await agenerate(...)'")

    async def _generate(self, call: Call, *, use_thread: bool) -> GenerationResult:
        total = time.perf_counter()
        result = steps.new_result(self)
        try:
            sendable = await steps.input_rails(self, call, result)
            if sendable is None:
                return result
            prices = await steps.prices_in_force(self)
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
            result.timings_ms["model"] = steps.ms_since(start)
            steps.account(self, result, response.usage, call.run_id, prices)
            await steps.output_rails(self, call, response.text, result)
            if result.blocked_at is None:
                result.tool_calls = list(response.tool_calls)
            return result
        finally:
            steps.finish(self, call, result, total)

    async def aclose(self) -> None:
        """Close the provider's HTTP clients and, when this object built it, the policy engine's store."""
        await self.provider.aclose()
        if self.owns_policies:
            await self.policies.close()

    # -- streaming -----------------------------------------------------------------------------------------
    def astream(self, prompt: Prompt, **options: Unpack[GenerateOptions]) -> RailsStream:
        """Stream the reply; text is released only after output rails covered it. See :class:`RailsStream`."""
        return RailsStream(self, self._call(prompt, options), self.stream_window_chars)

    stream = astream  # the same object iterates with ``for`` outside an event loop
