"""Every test leaves the root logger as it found it (autouse fixture ``root_logger_restored``).

A test that calls ``stockade.runtime.logging.configure_logging`` (or anything that configures logging) would
otherwise leave a handler on the root logger writing to that test's captured stream, closed once the test ends,
and the root level at INFO: a later test's log line then fails to emit and ``logging`` prints "--- Logging error
---" into whatever stderr is current, such as a ``CliRunner``'s output that the test parses as JSON. Which test
pays depends on the order of the suite, so the rule lives here, once, for every test.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def root_logger_restored() -> Iterator[None]:
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    yield
    for handler in [h for h in root.handlers if h not in handlers]:
        root.removeHandler(handler)
    for handler in handlers:
        if handler not in root.handlers:
            root.addHandler(handler)
    root.setLevel(level)
