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
