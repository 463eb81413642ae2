"""nats-py is imported only when push starts; without the extra the error names it."""

import subprocess
import sys

import pytest

from stockade.client import AsyncStockadeClient, ClientSettings, PushSettings


def test_importing_the_client_does_not_import_nats():
    code = "import sys, stockade.client; assert 'nats' not in sys.modules, 'nats imported eagerly'"
    subprocess.run([sys.executable, "-c", code], check=True)


async def test_missing_push_extra_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "nats", None)  # what an install without the `push` extra looks like
    settings = ClientSettings(push=PushSettings(nats_url="nats://127.0.0.1:1"))
    client = AsyncStockadeClient("stk_unit_key", settings)
    try:
        with pytest.raises(ImportError, match=r"stockade-client\[push\]"):
            await client.start_push()
    finally:
        await client.aclose()
