"""The public API is exactly __all__; the key never shows in repr or in httpx's log lines."""

import inspect
import logging

import httpx
import pytest

import stockade.client as client_pkg
from stockade.client import AsyncStockadeClient, ClientSettings, StockadeClient, StockadeClientError
from stockade.client.redaction import RedactApiKeyFilter

KEY = "stk_unit_secret_key_value_1234567890"


def test_all_matches_the_public_names():
    public = {
        name
        for name, value in vars(client_pkg).items()
        if not name.startswith("_") and not inspect.ismodule(value)
    }
    assert set(client_pkg.__all__) == public
    assert sorted(client_pkg.__all__) == client_pkg.__all__


def test_every_exception_is_in_one_hierarchy():
    errors = [getattr(client_pkg, n) for n in client_pkg.__all__ if n.endswith("Error")]
    assert len(errors) == 7
    assert all(issubclass(e, StockadeClientError) for e in errors)


def test_sync_and_async_clients_have_the_same_methods():
    def methods(cls):  # inherited ones too (the review methods live in stockade.client.reviews)
        own = {n: v for k in reversed(cls.__mro__) for n, v in vars(k).items()}
        return {n for n, v in own.items() if callable(v) and not n.startswith("_")} - {
            "close",
            "aclose",
        }

    assert methods(StockadeClient) == methods(AsyncStockadeClient)
    for name in methods(StockadeClient):
        sync_sig = inspect.signature(getattr(StockadeClient, name))
        async_sig = inspect.signature(getattr(AsyncStockadeClient, name))
        assert list(sync_sig.parameters) == list(async_sig.parameters), name
        assert inspect.iscoroutinefunction(getattr(AsyncStockadeClient, name)), name


async def test_the_key_is_not_in_repr():
    sync = StockadeClient(KEY, ClientSettings(base_url="http://127.0.0.1:1"))
    asyn = AsyncStockadeClient(KEY, ClientSettings(base_url="http://127.0.0.1:1"))
    try:
        assert KEY not in repr(sync) and KEY not in repr(asyn)
        assert KEY not in repr(vars(sync)) and KEY not in repr(vars(asyn))
    finally:
        sync.close()
        await asyn.aclose()


def test_an_empty_key_is_refused():
    with pytest.raises(ValueError):
        StockadeClient("")


def test_httpx_request_log_lines_have_the_key_masked():
    url = httpx.URL("http://h/prompts/active-prompt-version", params={"api_key": KEY, "project_id": "p"})
    record = logging.LogRecord("httpx", logging.INFO, __file__, 1, "HTTP Request: %s %s", ("GET", url), None)
    assert RedactApiKeyFilter().filter(record)
    assert KEY not in record.getMessage()
    assert "api_key=[REDACTED]&project_id=p" in record.getMessage()
