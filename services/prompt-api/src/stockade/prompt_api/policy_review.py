"""Manual review of guardrail policy versions: the third :class:`~stockade.prompt_api.reviews.ReviewKind` (prompts
and skills are in :mod:`~stockade.prompt_api.review_kinds`). A proposal is checked as a publish is
(:func:`~stockade.prompt_api.policy_check.check_policy`) when it is made, so approval publishes what was reviewed."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncSession

from stockade.prompt_api import policies
from stockade.prompt_api.policy_check import check_policy, policy_sha256
from stockade.prompt_api.reviews import Checked, ReviewKind, columns_of
from stockade.prompt_api.schemas import PolicyProposalCreate, PolicyProposalPublic, PolicyVersionPublic
from stockade.prompt_api.settings import LimitSettings
from stockade.prompt_api.tables import Policy, PolicyProposal


class _PolicyReviews(
    ReviewKind[PolicyProposal, PolicyProposalCreate, PolicyProposalPublic, PolicyVersionPublic]
):
    """A policy proposal is the YAML text of the configuration."""

    noun, table, subject = "policy", PolicyProposal, Policy
    create, public = PolicyProposalCreate, PolicyProposalPublic

    def collection(self) -> str:
        return "policies"

    def check(self, name: str, body: PolicyProposalCreate, limits: LimitSettings) -> Checked:
        check_policy(body.yaml, limits)
        return Checked({"policy_name": name, "yaml": body.yaml, "sha256": policy_sha256(body.yaml)})

    async def store(
        self, session: AsyncSession, row: PolicyProposal, checked: Checked
    ) -> PolicyProposalPublic:
        return PolicyProposalPublic.model_validate(columns_of(row))

    async def views(
        self, session: AsyncSession, rows: Sequence[PolicyProposal]
    ) -> list[PolicyProposalPublic]:
        return [PolicyProposalPublic.model_validate(columns_of(p)) for p in rows]

    async def publish(
        self, session: AsyncSession, owner_id: str, row: PolicyProposal, message: str
    ) -> PolicyVersionPublic:
        return await policies.insert_version(
            session, owner_id, row.project_id, row.policy_name, row.yaml, message
        )


POLICIES = _PolicyReviews()
