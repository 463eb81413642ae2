"""The one exception hierarchy of model-api; each becomes an HTTP status only at the edge (main.py)."""

from __future__ import annotations

__all__ = ["CatalogueError", "ConfigConflict", "ConfigNotFound", "ModelNotFound", "NoActiveConfig"]


class CatalogueError(Exception):
    """Base of every domain error of model-api."""


class ModelNotFound(CatalogueError):
    """No entry with that provider and model_id in the database configuration."""


class ConfigNotFound(CatalogueError):
    """No database configuration with that id."""


class ConfigConflict(CatalogueError):
    """A database configuration with that name exists already."""


class NoActiveConfig(CatalogueError):
    """No database configuration is active (the migrations make one active; only a manual edit undoes it)."""
