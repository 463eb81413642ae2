"""The client's own models of prompt-api's response bodies (unknown fields are ignored).

They mirror the service's README; the client does not import the service (services are not libraries).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Body(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class PromptVersion(_Body):
    """One immutable version of a prompt (the read, publish and rollback answers)."""

    project_id: str
    prompt_name: str
    version: int
    content: str | list[dict[str, Any]] = Field(description="Text, or chat messages {role, content}.")
    config: dict[str, Any] | None = None
    sha256: str
    commit_message: str | None = None
    published_at: datetime
    published_by: str


class PromptSummary(_Body):
    """A prompt of a project with its active version (GET /prompts)."""

    prompt_name: str
    active_version: int | None
    latest_version: int
    active: PromptVersion | None = None


class _Proposal(_Body):
    """What a proposal of every kind holds (prompt-api's one review mechanism); each kind adds its name and content."""

    id: str
    project_id: str
    status: str = Field(description="pending, approved or rejected.")
    sha256: str
    commit_message: str | None = None
    base_version: int | None = Field(default=None, description="The active version when it was proposed.")
    proposed_by: str
    proposed_at: datetime
    decided_by: str | None = None
    decided_at: datetime | None = None
    comment: str | None = None
    version: int | None = Field(default=None, description="The version it became, once approved.")


class PromptProposal(_Proposal):
    """A prompt version proposed on a Manual review project (``/prompt-reviews``)."""

    prompt_name: str
    content: str | list[dict[str, Any]]
    config: dict[str, Any] | None = None


class PromptDecision(_Body):
    """A decided prompt proposal; ``published`` is the version an approval made active (None: rejected)."""

    proposal: PromptProposal
    published: PromptVersion | None = None


class PolicyVersion(_Body):
    """One immutable version of a guardrail policy (a guardrails configuration as YAML text)."""

    project_id: str
    policy_name: str
    version: int
    yaml: str = Field(description="The guardrails configuration, exactly as published.")
    sha256: str
    commit_message: str | None = None
    published_at: datetime
    published_by: str


class PolicySummary(_Body):
    """A guardrail policy of a project with its active version (GET /policies)."""

    policy_name: str
    active_version: int | None
    latest_version: int
    active: PolicyVersion | None = None


class PolicyProposal(_Proposal):
    """A guardrail policy version proposed on a Manual review project (``/policy-reviews``)."""

    policy_name: str
    yaml: str


class PolicyDecision(_Body):
    """A decided policy proposal; ``published`` is the version an approval made active (None: rejected)."""

    proposal: PolicyProposal
    published: PolicyVersion | None = None


class SkillFile(_Body):
    path: str
    size: int
    sha256: str


class SkillVersionSummary(_Body):
    version: int
    sha256: str
    commit_message: str | None = None
    published_at: datetime
    published_by: str


class SkillVersion(_Body):
    """One immutable version of a skill (the publish answer)."""

    project_id: str
    skill_name: str
    version: int
    sha256: str
    front_matter: dict[str, Any]
    files: list[SkillFile]
    commit_message: str | None = None
    published_at: datetime
    published_by: str


class SkillDetail(SkillVersion):
    """A skill version's metadata plus the skill's active version and history (GET /skills/{name})."""

    active_version: int | None = None
    history: list[SkillVersionSummary] = Field(default_factory=list)


class SkillSummary(_Body):
    """A skill of a project with its active version (GET /skills)."""

    skill_name: str
    description: str
    active_version: int | None
    latest_version: int
    sha256: str | None = None
    published_at: datetime | None = None


class SkillProposal(_Proposal):
    """A skill version proposed on a Manual review project (``/skill-reviews``): SKILL.md and its files."""

    skill_name: str
    skill_md: str
    front_matter: dict[str, Any]
    files: list[SkillFile] = Field(description="The files beside SKILL.md, by path.")


class SkillDecision(_Body):
    """A decided skill proposal; ``published`` is the version an approval made active (None: rejected)."""

    proposal: SkillProposal
    published: SkillVersion | None = None
