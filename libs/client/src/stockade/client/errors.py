"""The client's one exception hierarchy, and the mapping from prompt-api responses to it.

Messages never contain the API key: they are built from the status, the server's error code and message, and
the method and path of the request (never its query string).
"""

from __future__ import annotations

import json

import httpx

READ_404_MESSAGE = (
    "prompt-api answered its uniform 404 for {what}: the key is malformed, unknown or revoked, the project or "
    "prompt does not exist, or the key's owner is not a member of the project's organisation. It does not "
    "mean the prompt is missing (the read endpoint gives one answer to every failure, spec 7.1)."
)


class StockadeClientError(Exception):
    """Base class of every error this client raises."""

    def __init__(
        self,
        message: str,
        *,
        status_code: int | None = None,
        code: str | None = None,
        server_message: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status_code = status_code
        self.code = code
        # the server's own words (its error message and the problems it lists), as a page shows them; None when
        # the server said nothing (unreachable, or a body that is not its error shape)
        self.server_message = server_message


class NotFoundError(StockadeClientError):
    """404. On the prompt read endpoint this is the uniform answer to every failure, not proof of absence."""


class AuthenticationError(StockadeClientError):
    """401: no key, or a malformed, unknown or revoked key. Retrying with the same key does not help."""


class PermissionDeniedError(StockadeClientError):
    """403: read scope, hosted key, no project membership, or no approver tag. Not transient (spec 7.3)."""


class ValidationError(StockadeClientError):
    """422 (or 400 for a refused path): the request was malformed; the message says what."""


class PayloadTooLargeError(StockadeClientError):
    """413: the request body is over the server's limit."""


class ServerUnavailableError(StockadeClientError):
    """The server could not be reached, timed out, or answered 5xx, and no cached copy could be served."""


_BY_STATUS: dict[int, type[StockadeClientError]] = {
    400: ValidationError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    413: PayloadTooLargeError,
    422: ValidationError,
}


def _server_error(response: httpx.Response) -> tuple[str | None, str, str | None]:
    """The server's error code, its message, and its message with the problems it lists (None: no error body)."""
    try:
        error = json.loads(response.content)["error"]
        code, message = str(error["code"]), str(error["message"])
    except (ValueError, KeyError, TypeError):
        return None, response.reason_phrase or "error", None
    details = error.get("details")
    problems = details.get("problems") if isinstance(details, dict) else None
    listed = (
        [str(p.get("problem", p)) for p in problems if isinstance(p, dict)]
        if isinstance(problems, list)
        else []
    )
    return code, message, f"{message}: {'; '.join(listed)}" if listed else message


def error_from_response(
    response: httpx.Response, *, uniform_read: bool = False, what: str = ""
) -> StockadeClientError:
    """The exception for a non-success response (the request's query string is never quoted)."""
    code, server_message, own_words = _server_error(response)
    status = response.status_code
    where = f"{response.request.method} {response.request.url.path}"
    if status == 404 and uniform_read:
        return NotFoundError(
            READ_404_MESSAGE.format(what=what), status_code=404, code=code, server_message=own_words
        )
    if status >= 500:
        return ServerUnavailableError(
            f"{where}: server error {status}: {server_message}",
            status_code=status,
            code=code,
            server_message=own_words,
        )
    cls = _BY_STATUS.get(status, StockadeClientError)
    return cls(
        f"{where}: {status} {code}: {server_message}" if code else f"{where}: {status}: {server_message}",
        status_code=status,
        code=code,
        server_message=own_words,
    )
