"""Reading request bodies with a size cap: JSON for the API, URL-encoded forms for the console."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, NoReturn
from urllib.parse import parse_qsl

from fastapi import HTTPException, Request
from fastapi.exceptions import RequestValidationError

from stockade.runtime.body import BodyTooLargeError, read_limited
from stockade.runtime.storable import unstorable_at

JSON_TYPE = "application/json"
FORM_TYPE = "application/x-www-form-urlencoded"


def media_type(request: Request) -> str:
    return request.headers.get("content-type", "").split(";", 1)[0].strip().lower()


async def read_capped(request: Request, max_bytes: int) -> bytes:
    """The body, or 413 as soon as it is known to be larger than ``max_bytes`` (header or streaming)."""
    try:
        return await read_limited(request, max_bytes)
    except BodyTooLargeError:
        raise HTTPException(413, f"the request body is larger than {max_bytes} bytes") from None


def invalid(message: str, field: str = "body") -> NoReturn:
    raise RequestValidationError([{"loc": (field,), "msg": message, "type": "value_error"}])


def _no_constants(name: str) -> NoReturn:
    invalid(f"{name} is not a JSON number")


async def read_json(request: Request, max_bytes: int) -> Any:
    """The parsed JSON body: 415 unless ``Content-Type: application/json``, 413 if too large, 422 if malformed."""
    if media_type(request) != JSON_TYPE:
        raise HTTPException(415, "send the body as JSON with the header Content-Type: application/json")
    raw = await read_capped(request, max_bytes)
    if not raw.strip():
        invalid("the body is empty: send a JSON object")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        invalid("the body is not UTF-8")
    try:
        data = json.loads(text, parse_constant=_no_constants)
    except json.JSONDecodeError as exc:
        invalid(f"malformed JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}")
    except RecursionError:
        invalid("the JSON body is nested too deeply")
    where = unstorable_at(data)
    if where is not None:
        invalid("contains a lone surrogate (\\ud800-\\udfff), which is not UTF-8", where or "body")
    return data


@dataclass(frozen=True)
class Form:
    """A parsed URL-encoded form; ``values`` keeps repeated fields (checkboxes)."""

    pairs: list[tuple[str, str]]

    def get(self, name: str, default: str = "") -> str:
        found = [v for k, v in self.pairs if k == name]
        return found[-1] if found else default

    def values(self, name: str) -> list[str]:
        return [v for k, v in self.pairs if k == name]


async def read_form(request: Request, max_bytes: int) -> Form:
    """A URL-encoded form (the only kind the console sends)."""
    if media_type(request) != FORM_TYPE:
        raise HTTPException(415, f"send the form as {FORM_TYPE}")
    raw = await read_capped(request, max_bytes)
    try:
        pairs = parse_qsl(raw.decode("utf-8"), keep_blank_values=True, max_num_fields=200)
    except (UnicodeDecodeError, ValueError):
        invalid("the form is not valid UTF-8 URL-encoded data")
    return Form(pairs)
