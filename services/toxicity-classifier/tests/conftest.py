"""toxicity-classifier served by uvicorn on a real loopback socket, with the shipped model."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from stockade.testing.asgi import serving
from stockade.toxicity_classifier.main import create_app
from stockade.toxicity_classifier.settings import LimitSettings, ToxicityClassifierSettings


def settings(**over: object) -> ToxicityClassifierSettings:
    return ToxicityClassifierSettings(**over)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
async def service_url() -> AsyncIterator[str]:
    """No key, small limits (so the limit tests send little)."""
    limits = LimitSettings(max_chars=500, max_batch=4, max_body_bytes=4096)
    async with serving(create_app(settings(limits=limits))) as url:
        yield url


@pytest.fixture(scope="module")
async def keyed_service_url() -> AsyncIterator[str]:
    async with serving(create_app(settings(api_key="test-bearer-key-0123456789"))) as url:
        yield url
