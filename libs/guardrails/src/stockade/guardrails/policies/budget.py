"""Token budget enforcement (spec 1 and 8): per-request and per-run limits, checked before the model is called.

A request is counted over its full context (system prompt, messages, tool definitions). ``block_on_exceeded``
chooses a blocking Verdict or a passing one with a warning. Run usage accumulates in memory per run id:
:meth:`TokenBudget.check` adds the request's input tokens when it lets the request through, and
:meth:`TokenBudget.record_output` adds the tokens the model produced.

Per-run totals follow the run lifecycle (spec 3): :meth:`TokenBudget.begin_run` opens a run's total and
:meth:`TokenBudget.end_run` frees it. ``GuardrailSystem.begin_run()``/``end_run()`` call them for every policy
engine of the system (the system's own and each ``LLMRails`` built on it), and a ``generate()`` without
``run_id`` is charged to the run open in its context. A run id charged without ``begin_run()`` (plain
``generate(run_id=...)``) is *unmanaged*: its total lives until ``end_run(run_id)`` or until it is the least
recently charged of more than ``max_unmanaged_runs`` such totals, so memory stays bounded either way.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict

from stockade.guardrails.errors import MissingExtraError
from stockade.guardrails.messages import ChatRequest
from stockade.guardrails.policies.config import TokenBudgetConfig
from stockade.guardrails.policies.decisions import decision
from stockade.guardrails.policies.tokens import ApproximateTokenCounter, TokenCounter, make_token_counter
from stockade.guardrails.verdict import Action, Verdict

NAME = "token_budget"


class TokenBudget:
    """Checks requests against the configured budgets and keeps per-run totals."""

    def __init__(
        self,
        config: TokenBudgetConfig | None = None,
        *,
        model: str | None = None,
        counter: TokenCounter | None = None,
    ) -> None:
        self.config = config or TokenBudgetConfig()
        self.counter = counter or self._default_counter(model)
        self._runs: dict[str, int] = {}  # opened by begin_run(), freed by end_run()
        self._unmanaged: OrderedDict[str, int] = OrderedDict()  # least recently charged first
        self._lock = threading.Lock()
        self.forgotten_runs = 0  # unmanaged totals dropped past max_unmanaged_runs

    def _default_counter(self, model: str | None) -> TokenCounter:
        """The configured counter. Without the 'tokens' extra and with no limit set (counting only feeds usage
        estimates), fall back to the approximate counter; with a limit set, fail fast with MissingExtraError."""
        cfg = self.config
        try:
            return make_token_counter(cfg.counter, model, cfg.fallback_encoding)
        except MissingExtraError:
            if cfg.enabled and (cfg.per_request is not None or cfg.per_run is not None):
                raise
            return ApproximateTokenCounter()

    def count(self, request: ChatRequest) -> int:
        return self.counter.count_request(request)

    # -- run lifecycle --------------------------------------------------------------------------------------
    def begin_run(self, run_id: str) -> None:
        """Open ``run_id``'s total (kept until :meth:`end_run`); tokens it was already charged carry over."""
        with self._lock:
            self._runs[run_id] = self._runs.get(run_id, 0) + self._unmanaged.pop(run_id, 0)

    def end_run(self, run_id: str) -> None:
        """Free ``run_id``'s total: a later charge to the same id starts from zero."""
        with self._lock:
            self._runs.pop(run_id, None)
            self._unmanaged.pop(run_id, None)

    def run_used(self, run_id: str) -> int:
        with self._lock:
            return self._used(run_id)

    def tracked_runs(self) -> int:
        """How many run totals are held (open runs plus unmanaged ones)."""
        with self._lock:
            return len(self._runs) + len(self._unmanaged)

    def _used(self, run_id: str) -> int:
        return self._runs.get(run_id, self._unmanaged.get(run_id, 0))

    def _charge(self, run_id: str, tokens: int) -> None:
        if run_id in self._runs:
            self._runs[run_id] += tokens
            return
        self._unmanaged[run_id] = self._unmanaged.pop(run_id, 0) + tokens
        if len(self._unmanaged) > self.config.max_unmanaged_runs:
            self._unmanaged.popitem(last=False)
            self.forgotten_runs += 1

    def check(self, request: ChatRequest, *, run_id: str | None = None) -> Verdict:
        """Decide on ``request``; when it may proceed, charge its input tokens to ``run_id``."""
        return self.assess(request, run_id=run_id)[0]

    def assess(self, request: ChatRequest, *, run_id: str | None = None) -> tuple[Verdict, int]:
        """Like :meth:`check`, also returning the counted request tokens (0 when budgets are off)."""
        start = time.perf_counter()
        cfg = self.config
        if not cfg.enabled:
            return decision(NAME, Action.ALLOW), 0
        tokens = self.count(request)
        detail: dict[str, int | str] = {"request_tokens": tokens}
        reason: str | None = None
        if cfg.per_request is not None and tokens > cfg.per_request:
            reason = "per_request_exceeded"
            detail["limit"] = cfg.per_request
        with self._lock:
            used = self._used(run_id) if run_id else 0
            if reason is None and run_id and cfg.per_run is not None and used + tokens > cfg.per_run:
                reason = "per_run_exceeded"
                detail.update(limit=cfg.per_run, run_tokens_used=used)
            action = (
                Action.ALLOW if reason is None else (Action.BLOCK if cfg.block_on_exceeded else Action.WARN)
            )
            if run_id and action is not Action.BLOCK:
                self._charge(run_id, tokens)
        elapsed = (time.perf_counter() - start) * 1e3
        return decision(NAME, action, reason=reason, detail=detail, duration_ms=elapsed), tokens

    def record_output(self, run_id: str | None, output_tokens: int) -> None:
        """Charge tokens the model produced to the run."""
        if run_id and output_tokens > 0:
            with self._lock:
                self._charge(run_id, output_tokens)
