"""Unique resource names for per-test isolation."""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable

import pytest

__all__ = ["make_unique_name", "unique_name"]

_PREFIX = re.compile(r"^[a-z][a-z0-9_]{0,53}$")


def make_unique_name(prefix: str = "t") -> str:
    """``make_unique_name("orders") -> "orders_1a2b3c4d"``.

    Lower-case letters, digits and ``_`` only, at most 63 characters: valid unquoted as a PostgreSQL
    database, a ClickHouse table, a JetStream stream or KV bucket, and a DynamoDB table.
    """
    if not _PREFIX.match(prefix):
        raise ValueError(
            f"unique_name prefix {prefix!r} must match {_PREFIX.pattern} "
            "(lower-case letter first, then lower-case letters, digits, '_'; at most 54 characters)"
        )
    return f"{prefix}_{secrets.token_hex(4)}"


@pytest.fixture
def unique_name() -> Callable[..., str]:
    """A callable: ``unique_name("orders") -> "orders_<8 hex>"``, different on every call."""
    return make_unique_name
