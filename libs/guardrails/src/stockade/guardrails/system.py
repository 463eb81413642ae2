"""GuardrailSystem: the content checks of the input, output and context rails (spec 1, 3, 6.2).

``check_input``/``check_output``/``check_context`` run every enabled check for that stage concurrently and
return a :class:`~stockade.guardrails.verdict.Verdict`. They work on any string payload (model input or output,
a tool result, an agent-to-agent message), so the trust boundary can reuse them as a content validator.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from dataclasses import replace
from pathlib import Path
from typing import Any, Required, TypedDict, TypeVar, Unpack

from stockade.contracts.policy import PolicyRef
from stockade.guardrails.checks.base import CheckContext, ContentCheck, SpendsTokens
from stockade.guardrails.checks.config import Stage
from stockade.guardrails.checks.registry import CheckSlot, build_enabled
from stockade.guardrails.checks.runner import run_checks, warm
from stockade.guardrails.config import GuardrailsConfig, load_config
from stockade.guardrails.config_overrides import apply_overrides
from stockade.guardrails.errors import GuardrailError
from stockade.guardrails.events import EventRecorder, NullRecorder, TeeRecorder, stamping
from stockade.guardrails.live import Live, Retirements, close_checks, entered
from stockade.guardrails.policies import PolicyEngine, ToolCallOptions, ToolCallTicket
from stockade.guardrails.storage.hook import GuardrailsStorageHook
from stockade.guardrails.storage.result import FlushResult
from stockade.guardrails.verdict import Verdict

_T = TypeVar("_T")


class CheckOptions(TypedDict, total=False):
    """The keywords of ``check_input``/``check_output`` and their ``_sync`` twins."""

    session_id: str | None
    metadata: dict[str, Any] | None


class ContextCheckOptions(CheckOptions, total=False):
    """The keywords of ``check_context`` and ``check_context_sync`` (``source`` is required)."""

    source: Required[str | None]


class GuardrailSystem:
    """Core safety checks. Construct once per process and share it (models load once, lazily).

    ``overrides`` are merged into the configuration before validation: a check name
    (``pii={"default_action": "block"}``), a ``guardrails`` section name (``storage={"enabled": True}``), or a
    root key (``models=[...]``).
    """

    def __init__(
        self,
        config: GuardrailsConfig | dict[str, Any] | str | Path | None = None,
        *,
        recorder: EventRecorder | None = None,
        **overrides: Any,
    ) -> None:
        cfg = load_config(config)
        if overrides:
            cfg = apply_overrides(cfg, overrides)
        self._overrides = overrides
        self.recorder: EventRecorder = recorder if recorder is not None else NullRecorder()
        # --- Storage lifecycle (spec 3, 6): with guardrails.storage.enabled every event also goes to the hook.
        self.storage = GuardrailsStorageHook(cfg.guardrails.storage)
        if self.storage.enabled:
            self.recorder = self.storage if recorder is None else TeeRecorder(recorder, self.storage)
        self._added: list[CheckSlot] = []  # add_check()'s, kept when from_platform swaps the configuration
        self._live = Live(cfg, self._build(cfg))
        self._retired = Retirements()  # checks of replaced versions, closed once their running checks end

        # --- Agent hooks (spec 1: tool authorization, rate limiting): see the ``policies`` property -------
        self._policies: PolicyEngine | None = None

    @classmethod
    def from_platform(cls, project_id: str, policy_name: str, **options: Any) -> GuardrailSystem:
        """A system on the active version of a guardrail policy published on the platform (prompt-api), following
        every activation by push; see :func:`stockade.guardrails.platform_policy.from_platform` for ``options``."""
        from stockade.guardrails.platform_policy import from_platform

        return from_platform(cls, project_id, policy_name, **options)

    @property
    def config(self) -> GuardrailsConfig:
        return self._live.config

    def _build(self, cfg: GuardrailsConfig) -> list[CheckSlot]:
        slots = build_enabled(cfg.guardrails.checks)
        for slot in slots:  # a check's own model calls (the classification judge) count in the budget
            if isinstance(slot.check, SpendsTokens):
                slot.check.bind_token_budget(self._charge_tokens)
        return [*slots, *self._added]

    def adopt(self, config: GuardrailsConfig, policy_ref: PolicyRef | None) -> None:
        """Swap to ``config`` between checks: its checks are built first (an error leaves the system as it was),
        then configuration, checks and ``policy_ref`` change in one assignment, so a check runs wholly on the
        old or wholly on the new one; the old one's checks are closed once those running on it end (``live``).
        A changed ``policies`` section starts a new engine (fresh counters); ``storage`` keeps its settings."""
        cfg = apply_overrides(config, self._overrides) if self._overrides else config
        live = Live(cfg, self._build(cfg), policy_ref)
        old = self._live
        self._live, self.policy_ref = live, policy_ref
        if cfg.guardrails.policies != old.config.guardrails.policies:
            self._policies = None
        self._retired.retire(old, kept=live.slots)  # closed once the checks running on it end (bounded wait)

    @property
    def policy_ref(self) -> PolicyRef | None:
        """The platform policy version this system's configuration is (None: a local configuration). Every
        event the storage hook keeps from now on carries it, so a run page shows which version decided."""
        return self.storage.policy_ref

    @policy_ref.setter
    def policy_ref(self, ref: PolicyRef | None) -> None:
        self.storage.policy_ref = ref
        self._live = replace(self._live, ref=ref)

    def _charge_tokens(self, run_id: str | None, tokens: int) -> None:
        self.policies.record_output_tokens(run_id, tokens)

    # --- agent hooks (delegated to stockade.guardrails.policies.PolicyEngine) --------------------------------
    @property
    def policies(self) -> PolicyEngine:
        """Token budget, tool authorization and rate limits; built on first use, recording to ``recorder``."""
        if self._policies is None:
            self._policies = PolicyEngine(self.config.guardrails.policies)
            self.storage.add_run_listener(self._policies)  # per-run token totals follow begin_run/end_run
        self._policies.recorder = self.recorder
        return self._policies

    def before_tool_call(self, tool: str, **call: Unpack[ToolCallOptions]) -> Verdict:
        """Tool authorization: role allowlist, global denylist (deny wins), approval of sensitive tools.

        Keywords (:class:`~stockade.guardrails.policies.ToolCallOptions`): ``role``, ``arguments``,
        ``approval``, ``session_id``, ``run_id``; see :meth:`PolicyEngine.before_tool_call`.
        """
        return self.policies.before_tool_call(tool, **call)

    async def before_request(self, session_id: str, *, run_id: str | None = None) -> Verdict:
        """Count one model request of the session; blocks past the per-session request quota."""
        return await self.policies.before_request(session_id, run_id=run_id)

    async def check_tool_call_limit(self, session_id: str, *, run_id: str | None = None) -> Verdict:
        """Reserve one tool call; blocks past the tool-call quota or the cumulative tool time."""
        return await self.policies.check_tool_call_limit(session_id, run_id=run_id)

    def tool_call_started(self, session_id: str, tool: str) -> ToolCallTicket:
        """Session tracking: a tool call began; pass the ticket to tool_call_finished()."""
        return self.policies.tool_call_started(session_id, tool)

    async def tool_call_finished(
        self, ticket: ToolCallTicket, *, duration_seconds: float | None = None, run_id: str | None = None
    ) -> Verdict:
        """Session tracking: add the call's run time to the session's cumulative tool time."""
        return await self.policies.tool_call_finished(
            ticket, duration_seconds=duration_seconds, run_id=run_id
        )

    # --- storage lifecycle (delegated to stockade.guardrails.storage.GuardrailsStorageHook) --------------------
    def link_arms(self, project_id: str | None = None, **links: Any) -> Any:
        """Process-wide platform links (project, agent, environment, prompt); see GuardrailsStorageHook."""
        return self.storage.link_arms(project_id, **links)

    def link_run_context(self, **links: Any) -> Any:
        """Links of the current (or next) run: correlation_id, labels, or any link_arms() field."""
        return self.storage.link_run_context(**links)

    def begin_run(self, run_id: str | None = None, **kwargs: Any) -> str:
        """Open a run: its events are buffered in memory until end_run() (storage enabled), and the per-run
        token budget counts every generate() in it (spec 3). end_run() frees both."""
        return self.storage.begin_run(run_id, **kwargs)

    async def end_run(self, run_id: str | None = None) -> FlushResult:
        """Close the run and flush its events to the platform backend; failures come back as a value."""
        return await self.storage.end_run(run_id)

    def end_run_sync(self, run_id: str | None = None) -> FlushResult:
        return _run_sync(self.end_run(run_id), "end_run")

    # --- checks ----------------------------------------------------------------------------------------------
    @property
    def checks(self) -> list[ContentCheck]:
        return [s.check for s in self._live.slots]

    def add_check(
        self, check: ContentCheck, *, timeout_s: float = 5.0, fail_closed: bool | None = None
    ) -> None:
        """Add a check object (any :class:`ContentCheck`) next to the configured ones."""
        slot = CheckSlot(check, timeout_s, fail_closed)
        self._added.append(slot)
        self._live.slots.append(slot)

    async def check_input(
        self, text: str, *, session_id: str | None = None, metadata: dict[str, Any] | None = None
    ) -> Verdict:
        """Validate text going into a model. A failing check blocks unless configured fail-open."""
        return await self._check(Stage.INPUT, text, session_id, metadata)

    async def check_output(
        self, text: str, *, session_id: str | None = None, metadata: dict[str, Any] | None = None
    ) -> Verdict:
        """Validate model output (includes exfiltration detection). Failure blocks or masks."""
        return await self._check(Stage.OUTPUT, text, session_id, metadata)

    async def check_context(
        self,
        text: str,
        *,
        source: str | None,
        session_id: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> Verdict:
        """Validate text that enters a model's context from outside the user: a tool result, a retrieved
        document, an e-mail, a web page, another agent's output. ``source`` says which (``tool:search_web``,
        ``document``, ``email``, ``web``); checks see it in ``ctx.source`` and events record it. Runs the
        checks whose stages include ``context``; a failing check blocks unless ``fail_closed_context: false``.
        """
        return await self._check(Stage.CONTEXT, text, session_id, metadata, source=source)

    # The sync twins take the same keywords as the async methods (typed by CheckOptions/ContextCheckOptions).
    def check_input_sync(self, text: str, **options: Unpack[CheckOptions]) -> Verdict:
        return _run_sync(self.check_input(text, **options), "check_input")

    def check_output_sync(self, text: str, **options: Unpack[CheckOptions]) -> Verdict:
        return _run_sync(self.check_output(text, **options), "check_output")

    def check_context_sync(self, text: str, **options: Unpack[ContextCheckOptions]) -> Verdict:
        return _run_sync(self.check_context(text, **options), "check_context")

    async def warmup(self) -> None:
        """Load models now instead of on the first check."""
        await asyncio.gather(*(warm(slot) for slot in self._live.slots))

    async def aclose(self) -> None:
        """Close the checks' pooled connections (replaced versions' too) and from_platform's client (push)."""
        await close_checks([*self._retired.take(), *(slot.check for slot in self._live.slots)])
        client = getattr(self, "_platform_client", None)
        if client is not None:
            await asyncio.to_thread(client.close)

    async def _check(
        self,
        stage: Stage,
        text: str,
        session_id: str | None,
        metadata: dict[str, Any] | None,
        *,
        source: str | None = None,
    ) -> Verdict:
        if not isinstance(text, str):
            raise TypeError(f"text must be str, not {type(text).__name__}")
        if source is not None and not isinstance(source, str):
            raise TypeError(f"source must be str or None, not {type(source).__name__}")
        live = entered(lambda: self._live)  # one read of one configuration: its checks, settings, version
        self._retired.loop = asyncio.get_running_loop()
        try:  # a swap meanwhile closes this version's checks only once this (and the others on it) ended
            return await self._run_on(live, stage, text, session_id, metadata, source)
        finally:
            live.runs.exit()

    async def _run_on(
        self,
        live: Live,
        stage: Stage,
        text: str,
        session_id: str | None,
        metadata: dict[str, Any] | None,
        source: str | None,
    ) -> Verdict:
        ctx = CheckContext(
            stage=stage,
            session_id=session_id,
            source=source,
            metadata=dict(metadata or {}),
            recorder=stamping(
                self.recorder, live.ref
            ),  # a swap meanwhile does not rename this check's version
        )
        slots = [s for s in live.slots if stage in s.check.stages]
        if not slots:
            return Verdict.allow(stage.value)
        checks_cfg = live.config.guardrails.checks
        fail_closed = {
            Stage.INPUT: checks_cfg.fail_closed_input,
            Stage.OUTPUT: checks_cfg.fail_closed_output,
            Stage.CONTEXT: checks_cfg.fail_closed_context,
        }[stage]
        return await run_checks(slots, text, ctx, fail_closed)


def _run_sync(coro: Coroutine[Any, Any, _T], name: str) -> _T:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    coro.close()
    raise GuardrailError(f"{name}_sync() was called inside a running event loop; use 'await {name}(...)'")
