"""Request and response models (the table models never leave the service)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints

from stockade.runtime.storable import StorableStr, check_storable

PromptName = Annotated[
    str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$", min_length=1, max_length=128)
]
MAX_VERSION = 2**31 - 1  # version columns are PostgreSQL integers: a larger number is a 422, never a 500
ProjectId = Annotated[str, StringConstraints(min_length=1, max_length=64), AfterValidator(check_storable)]


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: Literal["system", "user", "assistant", "tool", "developer"]
    content: str


# The fields a publish and a proposal of the same kind share.
PromptContent = Annotated[str | list[ChatMessage], Field(description="Text, or chat messages with roles.")]
PromptConfig = Annotated[
    dict[str, Any] | None, Field(description="Model settings (model, temperature, ...).")
]
CommitMessage = Annotated[StorableStr | None, Field(max_length=2000)]


class _ProjectBody(BaseModel):
    """A request body: unknown fields are refused, and the project comes first."""

    model_config = ConfigDict(extra="forbid")

    project_id: ProjectId


class PromptPublish(_ProjectBody):
    prompt_name: PromptName
    content: PromptContent
    config: PromptConfig = None
    commit_message: CommitMessage = None


class PromptRollback(_ProjectBody):
    version: int = Field(
        ge=1, le=MAX_VERSION, description="The earlier version whose content becomes the new active version."
    )
    commit_message: CommitMessage = None


class PromptProposalCreate(_ProjectBody):
    """A version proposed for review on a Manual review project (the prompt's name is in the path)."""

    content: PromptContent
    config: PromptConfig = None
    commit_message: CommitMessage = None


class ReviewDecision(_ProjectBody):
    """An approver's decision on a pending proposal; a rejection needs a comment."""

    comment: StorableStr | None = Field(default=None, max_length=2000)


class PromptProposalPublic(BaseModel):
    id: str
    project_id: str
    prompt_name: str
    status: Literal["pending", "approved", "rejected"]
    content: str | list[dict[str, Any]]
    config: dict[str, Any] | None
    sha256: str
    commit_message: str | None
    base_version: int | None = Field(description="The prompt's active version when this was proposed.")
    proposed_by: str
    proposed_at: datetime
    decided_by: str | None
    decided_at: datetime | None
    comment: str | None
    version: int | None = Field(description="The version it became, once approved.")


class PromptVersionPublic(BaseModel):
    project_id: str
    prompt_name: str
    version: int
    content: str | list[dict[str, Any]]
    config: dict[str, Any] | None
    sha256: str
    commit_message: str | None
    published_at: datetime
    published_by: str


class PromptSummary(BaseModel):
    prompt_name: str
    active_version: int | None
    latest_version: int
    active: PromptVersionPublic | None


class Base64File(BaseModel):
    model_config = ConfigDict(extra="forbid")

    base64: str


SkillFiles = Annotated[dict[str, str | Base64File], Field(default_factory=dict)]


class _SkillContent(_ProjectBody):
    """A skill version's content, as published or proposed."""

    skill_md: StorableStr = Field(min_length=1)
    files: SkillFiles
    commit_message: CommitMessage = None


class SkillPublish(_SkillContent):
    skill_name: StorableStr = Field(min_length=1, max_length=64)


class SkillFilePublic(BaseModel):
    path: str
    size: int
    sha256: str


class SkillVersionPublic(BaseModel):
    project_id: str
    skill_name: str
    version: int
    sha256: str
    front_matter: dict[str, Any]
    files: list[SkillFilePublic]
    commit_message: str | None
    published_at: datetime
    published_by: str


class SkillVersionSummary(BaseModel):
    version: int
    sha256: str
    commit_message: str | None
    published_at: datetime
    published_by: str


class SkillDetail(SkillVersionPublic):
    active_version: int | None
    history: list[SkillVersionSummary]


class SkillSummary(BaseModel):
    skill_name: str
    description: str
    active_version: int | None
    latest_version: int
    sha256: str | None
    published_at: datetime | None


class SkillProposalCreate(_SkillContent):
    """A skill version proposed for review on a Manual review project (the skill's name is in the path)."""


class SkillProposalPublic(BaseModel):
    id: str
    project_id: str
    skill_name: str
    status: Literal["pending", "approved", "rejected"]
    skill_md: str
    front_matter: dict[str, Any]
    files: list[SkillFilePublic] = Field(description="The files beside SKILL.md, by path.")
    sha256: str
    commit_message: str | None
    base_version: int | None = Field(description="The skill's active version when this was proposed.")
    proposed_by: str
    proposed_at: datetime
    decided_by: str | None
    decided_at: datetime | None
    comment: str | None
    version: int | None = Field(description="The version it became, once approved.")


# --- guardrail policies (issue 31): a guardrails configuration as YAML text, checked before it is stored ------
PolicyName = PromptName
PolicyYaml = Annotated[
    StorableStr,
    Field(min_length=1, description="The guardrails configuration (YAML), exactly as agents will load it."),
]


class PolicyPublish(_ProjectBody):
    policy_name: PolicyName
    yaml: PolicyYaml
    commit_message: CommitMessage = None


class PolicyRollback(PromptRollback):
    """The earlier version whose YAML becomes the new active version."""


class PolicyProposalCreate(_ProjectBody):
    """A policy version proposed for review on a Manual review project (the policy's name is in the path)."""

    yaml: PolicyYaml
    commit_message: CommitMessage = None


class PolicyVersionPublic(BaseModel):
    project_id: str
    policy_name: str
    version: int
    yaml: str
    sha256: str = Field(description="SHA-256 (hex) of the UTF-8 YAML text.")
    commit_message: str | None
    published_at: datetime
    published_by: str


class PolicySummary(BaseModel):
    policy_name: str
    active_version: int | None
    latest_version: int
    active: PolicyVersionPublic | None


class PolicyProposalPublic(BaseModel):
    id: str
    project_id: str
    policy_name: str
    status: Literal["pending", "approved", "rejected"]
    yaml: str
    sha256: str
    commit_message: str | None
    base_version: int | None = Field(description="The policy's active version when this was proposed.")
    proposed_by: str
    proposed_at: datetime
    decided_by: str | None
    decided_at: datetime | None
    comment: str | None
    version: int | None = Field(description="The version it became, once approved.")
