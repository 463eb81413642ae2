"""prompt-api's domain errors; the routes turn them into statuses (see README, Errors)."""

from __future__ import annotations


class PromptApiError(Exception):
    """Base of prompt-api's errors."""


class Forbidden(PromptApiError):
    """The key is valid but its owner may not do this (403, not transient)."""


class NotFound(PromptApiError):
    """Unknown prompt, skill, version or file (404) on an endpoint that may say so."""


class InvalidContent(PromptApiError):
    """A body that parses but breaks a content rule (422)."""


class InvalidPath(PromptApiError):
    """A traversal-shaped skill name or file path (400); never resolved."""


class BodyTooLarge(PromptApiError):
    """The request body is over the limit (413)."""


class NotUnderReview(InvalidContent):
    """A proposal on a project that publishes directly (422: publish instead)."""


class AlreadyDecided(InvalidContent):
    """An approval or rejection of a proposal that is no longer pending (422)."""


class InvalidPolicy(InvalidContent):
    """A guardrail policy that is not a valid guardrails configuration (422 ``invalid_policy``): ``path`` is the
    dotted key path of the first problem ("" for the document as a whole)."""

    code = "invalid_policy"

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path


class PolicyHasSecret(InvalidPolicy):
    """A guardrail policy carrying a secret (422 ``policy_has_secret``); the value is never echoed."""

    code = "policy_has_secret"
