"""The prompt and skill review methods of both clients (the Manual review queue: list, approve, reject), kept
here so each client module stays one screenful of transport; ``StockadeClient`` and ``AsyncStockadeClient``
inherit them and provide ``_run``."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from stockade.client import review_calls
from stockade.client.models import PromptDecision, PromptProposal, SkillDecision, SkillProposal

if TYPE_CHECKING:
    from stockade.client.calls import Call

T = TypeVar("T")


class SyncReviews:
    if TYPE_CHECKING:

        def _run(self, call: Call[T]) -> T: ...

    def list_prompt_proposals(self, project_id: str, status: str = "pending") -> list[PromptProposal]:
        """The project's prompt proposals with ``status`` (pending, approved or rejected), at most 200."""
        return self._run(review_calls.list_prompt_proposals(project_id, status))

    def decide_prompt_proposal(
        self, project_id: str, proposal_id: str, verdict: str, comment: str | None = None
    ) -> PromptDecision:
        """``verdict``: approve (publishes it; needs the approver tag) or reject (``comment`` required)."""
        return self._run(review_calls.decide_prompt_proposal(project_id, proposal_id, verdict, comment))

    def list_skill_proposals(self, project_id: str, status: str = "pending") -> list[SkillProposal]:
        """The project's skill proposals with ``status`` (pending, approved or rejected), at most 200."""
        return self._run(review_calls.list_skill_proposals(project_id, status))

    def decide_skill_proposal(
        self, project_id: str, proposal_id: str, verdict: str, comment: str | None = None
    ) -> SkillDecision:
        """``verdict``: approve (publishes it; needs the approver tag) or reject (``comment`` required)."""
        return self._run(review_calls.decide_skill_proposal(project_id, proposal_id, verdict, comment))


class AsyncReviews:
    if TYPE_CHECKING:

        async def _run(self, call: Call[T]) -> T: ...

    async def list_prompt_proposals(self, project_id: str, status: str = "pending") -> list[PromptProposal]:
        """The project's prompt proposals with ``status`` (pending, approved or rejected), at most 200."""
        return await self._run(review_calls.list_prompt_proposals(project_id, status))

    async def decide_prompt_proposal(
        self, project_id: str, proposal_id: str, verdict: str, comment: str | None = None
    ) -> PromptDecision:
        """``verdict``: approve (publishes it; needs the approver tag) or reject (``comment`` required)."""
        return await self._run(review_calls.decide_prompt_proposal(project_id, proposal_id, verdict, comment))

    async def list_skill_proposals(self, project_id: str, status: str = "pending") -> list[SkillProposal]:
        """The project's skill proposals with ``status`` (pending, approved or rejected), at most 200."""
        return await self._run(review_calls.list_skill_proposals(project_id, status))

    async def decide_skill_proposal(
        self, project_id: str, proposal_id: str, verdict: str, comment: str | None = None
    ) -> SkillDecision:
        """``verdict``: approve (publishes it; needs the approver tag) or reject (``comment`` required)."""
        return await self._run(review_calls.decide_skill_proposal(project_id, proposal_id, verdict, comment))
