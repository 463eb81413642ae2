"""The error statuses each route documents in the OpenAPI document (spec 7; README, Errors), and the bodies of
the routes that read theirs by hand. The uniform read documents its one 404 itself."""

from __future__ import annotations

from typing import Any

from stockade.prompt_api.schemas import (
    PolicyProposalCreate,
    PolicyPublish,
    PolicyRollback,
    PromptProposalCreate,
    PromptPublish,
    PromptRollback,
    ReviewDecision,
    SkillProposalCreate,
    SkillPublish,
)
from stockade.runtime.body import documented_body
from stockade.runtime.errors import error_responses

_UNAUTHORISED = "Missing, invalid or revoked API key (checked before anything is resolved)."
_FORBIDDEN = (
    "The key's owner may not do this here (not a member, read scope, no approver tag); not transient."
)
_NOT_FOUND = "Unknown prompt, skill, policy, version, file or proposal."
_INVALID = "Parameters or body do not match the schema, or break a content rule."

READ = error_responses({401: _UNAUTHORISED, 403: _FORBIDDEN, 404: _NOT_FOUND, 422: _INVALID})
SKILL_READ = {**READ, **error_responses({400: "A traversal-shaped skill name or file path; never resolved."})}
WRITE = {
    **READ,
    **error_responses({413: "The request body is over limits.max_body_bytes."}),
}
SKILL_WRITE = {**WRITE, **error_responses({400: "A traversal-shaped skill name or file path."})}
NOT_MODIFIED: dict[int | str, dict[str, Any]] = {304: {"description": "Matches If-None-Match: no body."}}

PROMPT_PUBLISH_BODY = documented_body(PromptPublish)
PROMPT_ROLLBACK_BODY = documented_body(PromptRollback)
PROPOSAL_BODY = documented_body(PromptProposalCreate)
DECISION_BODY = documented_body(ReviewDecision)
SKILL_PUBLISH_BODY = documented_body(SkillPublish)
SKILL_PROPOSAL_BODY = documented_body(SkillProposalCreate)
POLICY_PUBLISH_BODY = documented_body(PolicyPublish)
POLICY_ROLLBACK_BODY = documented_body(PolicyRollback)
POLICY_PROPOSAL_BODY = documented_body(PolicyProposalCreate)
