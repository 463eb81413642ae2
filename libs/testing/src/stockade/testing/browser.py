"""Chromium: ``STOCKADE_CHROMIUM`` or Debian's ``/usr/bin/chromium``, driven by Playwright for Python.

Playwright's own browser download (``playwright install``) does not work on this project's machines,
so the harness always passes ``executable_path``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import pytest_asyncio

from stockade.testing.availability import server_unavailable
from stockade.testing.report import ServerRecord, report_of

if TYPE_CHECKING:
    from playwright.async_api import Browser, Page

__all__ = ["CHROMIUM_ARGS", "browser_page", "chromium_browser", "chromium_executable", "find_chromium"]

SERVER = "Chromium"
HOW_TO = "set STOCKADE_CHROMIUM=/path/to/chromium, or install Debian's chromium (apt-get install chromium)"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def find_chromium() -> Path | None:
    explicit = os.environ.get("STOCKADE_CHROMIUM")
    if explicit:
        return Path(explicit) if Path(explicit).exists() else None
    for candidate in ("/usr/bin/chromium", shutil.which("chromium"), shutil.which("chromium-browser")):
        if candidate and Path(candidate).exists():
            return Path(candidate)
    return None


def _chromium_version(executable: Path) -> str | None:
    try:
        out = subprocess.run(
            [str(executable), "--version"], capture_output=True, text=True, timeout=30, check=False
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.strip() or None


@pytest.fixture(scope="session")
def chromium_executable(request: pytest.FixtureRequest) -> Path:
    """Path of a Chromium binary (``STOCKADE_CHROMIUM`` or /usr/bin/chromium)."""
    report = report_of(request.config)
    executable = find_chromium()
    if executable is None:
        report.unavailable("browser", "local", "no chromium", f"no chromium executable found; {HOW_TO}")
    origin = "env STOCKADE_CHROMIUM" if os.environ.get("STOCKADE_CHROMIUM") else "local binary"
    report.record("browser", ServerRecord(origin, _chromium_version(executable), str(executable)))
    return executable


@pytest_asyncio.fixture(scope="session")
async def chromium_browser(chromium_executable: Path) -> AsyncIterator[Browser]:
    """One headless Chromium for the session, launched through Playwright with ``executable_path``."""
    try:
        from playwright.async_api import async_playwright
    except ImportError:
        server_unavailable(
            SERVER, "playwright is not installed (pip install playwright; no browser download)"
        )
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=str(chromium_executable), args=CHROMIUM_ARGS, headless=True
        )
        try:
            yield browser
        finally:
            await browser.close()


@pytest_asyncio.fixture
async def browser_page(chromium_browser: Browser) -> AsyncIterator[Page]:
    """A fresh page in its own browser context (cookies and storage isolated per test)."""
    context = await chromium_browser.new_context()
    try:
        yield await context.new_page()
    finally:
        await context.close()
