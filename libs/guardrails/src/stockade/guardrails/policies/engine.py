"""PolicyEngine: the agent hooks (token budget, tool authorization, rate limits) with every decision recorded.

Usable alone or through :class:`~stockade.guardrails.system.GuardrailSystem`, which delegates its agent-hook
methods here. Each decision is returned as a :class:`~stockade.guardrails.verdict.Verdict` (``stage`` names
the policy) and recorded as one :class:`~stockade.guardrails.events.GuardrailEvent`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from stockade.guardrails.events import EventKind, EventRecorder, NullRecorder
from stockade.guardrails.messages import ChatRequest
from stockade.guardrails.policies.approval import Approval
from stockade.guardrails.policies.budget import TokenBudget
from stockade.guardrails.policies.config import PoliciesConfig
from stockade.guardrails.policies.counters.base import CounterStore
from stockade.guardrails.policies.decisions import PolicyVerdict, record_decision
from stockade.guardrails.policies.rate_limits import RateLimiter, ToolCallTicket
from stockade.guardrails.policies.tokens import TokenCounter
from stockade.guardrails.policies.tools import ToolAuthorizer
from stockade.guardrails.verdict import Verdict

if TYPE_CHECKING:  # the root config imports this package's config: no runtime import (cycle)
    from stockade.guardrails.config import GuardrailsConfig


class PolicyEngine:
    """Agent hooks over one policies configuration. Synchronous where no I/O happens, async otherwise."""

    def __init__(
        self,
        config: PoliciesConfig | GuardrailsConfig | None = None,
        *,
        recorder: EventRecorder | None = None,
        store: CounterStore | None = None,
        model: str | None = None,
        token_counter: TokenCounter | None = None,
    ) -> None:
        if config is not None and not isinstance(config, PoliciesConfig):
            config = config.guardrails.policies
        self.config = config or PoliciesConfig()
        self.recorder: EventRecorder = recorder or NullRecorder()
        self.tools = ToolAuthorizer(self.config.tools)
        self.rate_limiter = RateLimiter(self.config.rate_limits, store=store)
        self._model, self._counter = model, token_counter
        self._budget: TokenBudget | None = None

    @property
    def budget(self) -> TokenBudget:
        """The token budget, built on first use (tiktoken loads only when budgets are used)."""
        if self._budget is None:
            self._budget = TokenBudget(self.config.token_budget, model=self._model, counter=self._counter)
        return self._budget

    # -- token budget --------------------------------------------------------------------------------------
    def check_token_budget(
        self, request: ChatRequest, *, session_id: str | None = None, run_id: str | None = None
    ) -> Verdict:
        return self.assess_token_budget(request, session_id=session_id, run_id=run_id)[0]

    def assess_token_budget(
        self, request: ChatRequest, *, session_id: str | None = None, run_id: str | None = None
    ) -> tuple[Verdict, int]:
        """Check the request's budget before the model is called; also return its counted tokens."""
        verdict, tokens = self.budget.assess(request, run_id=run_id)
        record_decision(
            self.recorder,
            EventKind.TOKEN_BUDGET,
            verdict,
            session_id=session_id,
            run_id=run_id,
            payload={
                "request_tokens": tokens,
                "per_request": self.config.token_budget.per_request,
                "per_run": self.config.token_budget.per_run,
            },
        )
        return verdict, tokens

    def record_output_tokens(self, run_id: str | None, output_tokens: int) -> None:
        self.budget.record_output(run_id, output_tokens)

    # -- run lifecycle (a RunListener of the storage hook: GuardrailSystem.begin_run()/end_run() call these) -
    def run_began(self, run_id: str) -> None:
        """A run opened: its token total is kept until run_ended() (built now only when per_run is set)."""
        if self._budget is not None or self.config.token_budget.per_run is not None:
            self.budget.begin_run(run_id)

    def run_ended(self, run_id: str) -> None:
        """A run closed: free its token total."""
        if self._budget is not None:
            self._budget.end_run(run_id)

    # -- tool authorization --------------------------------------------------------------------------------
    def before_tool_call(
        self,
        tool: str,
        *,
        role: str | None = None,
        arguments: dict[str, Any] | None = None,
        approval: Approval | None = None,
        session_id: str | None = None,
        run_id: str | None = None,
    ) -> Verdict:
        """May ``role`` call ``tool`` with ``arguments``? Deny wins; sensitive tools need a matching approval."""
        verdict, detail = self.tools.evaluate(tool, role=role, arguments=arguments, approval=approval)
        record_decision(
            self.recorder,
            EventKind.TOOL_AUTHORIZATION,
            verdict,
            session_id=session_id,
            run_id=run_id,
            payload=dict(detail),
        )
        return verdict

    # -- rate limits ---------------------------------------------------------------------------------------
    async def before_request(self, session_id: str, *, run_id: str | None = None) -> Verdict:
        verdict = await self.rate_limiter.before_request(session_id)
        self._record_rate(verdict, session_id, run_id, "requests")
        return verdict

    async def check_tool_call_limit(self, session_id: str, *, run_id: str | None = None) -> Verdict:
        verdict = await self.rate_limiter.check_tool_call_limit(session_id)
        self._record_rate(verdict, session_id, run_id, "tool_calls")
        return verdict

    def tool_call_started(self, session_id: str, tool: str) -> ToolCallTicket:
        return self.rate_limiter.tool_call_started(session_id, tool)

    async def tool_call_finished(
        self, ticket: ToolCallTicket, *, duration_seconds: float | None = None, run_id: str | None = None
    ) -> Verdict:
        verdict = await self.rate_limiter.tool_call_finished(ticket, duration_seconds=duration_seconds)
        self._record_rate(verdict, ticket.session_id, run_id, "tool_execution_seconds", tool=ticket.tool)
        return verdict

    def _record_rate(
        self, verdict: Verdict, session_id: str, run_id: str | None, counter: str, **extra: Any
    ) -> None:
        payload: dict[str, Any] = {"counter": counter, **extra}
        if isinstance(verdict, PolicyVerdict):
            payload.update(verdict.detail)
        record_decision(
            self.recorder,
            EventKind.RATE_LIMIT,
            verdict,
            session_id=session_id,
            run_id=run_id,
            payload=payload,
        )

    async def close(self) -> None:
        await self.rate_limiter.close()


AgentHooks = PolicyEngine
