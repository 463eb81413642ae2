"""Organisations, users, projects, memberships, approver tags, API keys and sessions."""

__all__: list[str] = []
