"""Status -> exception class, and messages that never quote the query string (where the read's key travels)."""

import httpx
import pytest

from stockade.client import (
    AuthenticationError,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    ServerUnavailableError,
    StockadeClientError,
    ValidationError,
)
from stockade.client.errors import error_from_response

KEY = "stk_unit_secret_key_value_1234567890"
REQUEST = httpx.Request("GET", f"http://h/prompts/active-prompt-version?api_key={KEY}&project_id=p")


@pytest.mark.parametrize(
    ("status", "cls"),
    [
        (400, ValidationError),
        (401, AuthenticationError),
        (403, PermissionDeniedError),
        (404, NotFoundError),
        (413, PayloadTooLargeError),
        (422, ValidationError),
        (409, StockadeClientError),
        (500, ServerUnavailableError),
        (503, ServerUnavailableError),
    ],
)
def test_status_maps_to_its_class(status, cls):
    body = {"error": {"code": "some_code", "message": "what happened"}}
    error = error_from_response(httpx.Response(status, json=body, request=REQUEST))
    assert type(error) is cls
    assert (error.status_code, error.code) == (status, "some_code")
    assert "what happened" in str(error) and "/prompts/active-prompt-version" in str(error)
    assert KEY not in str(error) and "api_key" not in str(error)


def test_a_body_without_the_error_shape_still_maps():
    error = error_from_response(httpx.Response(401, text="<html>proxy says no</html>", request=REQUEST))
    assert type(error) is AuthenticationError and error.code is None and "Unauthorized" in str(error)
    assert error.server_message is None  # the server said nothing of its own


def test_server_message_is_the_servers_words_with_the_problems_it_lists():
    problems = [{"path": "content", "problem": "too long"}, {"path": "config", "problem": "not an object"}]
    body = {
        "error": {"code": "invalid_request", "message": "invalid body", "details": {"problems": problems}}
    }
    error = error_from_response(httpx.Response(422, json=body, request=REQUEST))
    assert error.server_message == "invalid body: too long; not an object"
    plain = {"error": {"code": "forbidden", "message": "needs the approver tag"}}
    forbidden = error_from_response(httpx.Response(403, json=plain, request=REQUEST))
    assert forbidden.server_message == "needs the approver tag"
    assert "/prompts/" in forbidden.message  # the message still says which call was refused
