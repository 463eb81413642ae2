"""The one exception hierarchy of stockade.identity (domain errors become HTTP statuses only at the edge)."""

from __future__ import annotations


class IdentityError(Exception):
    """Base of every error raised by stockade.identity."""


class NotFoundError(IdentityError):
    """An organisation, user, project or key named by the caller does not exist."""


class ConflictError(IdentityError):
    """The thing to create exists already (unique name, e-mail or membership)."""


class InvalidInputError(IdentityError):
    """A value is malformed (empty name, bad e-mail, unknown flow or scope, ambiguous name)."""
