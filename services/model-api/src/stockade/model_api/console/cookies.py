"""The console's cookies: the session (SameSite=Lax) and the sealed prompt-api key (SameSite=Strict). Both are
HttpOnly on path ``/`` and Secure as ``session.secure`` says (``auto``: when the request came over https)."""

from __future__ import annotations

from typing import Literal

from fastapi import Request
from fastapi.responses import Response

from stockade.model_api.settings import ModelApiSettings

SameSite = Literal["lax", "strict"]


def secure(request: Request, settings: ModelApiSettings) -> bool:
    mode = settings.session.secure
    return mode == "always" or (mode == "auto" and request.url.scheme == "https")


def set_cookie(
    response: Response,
    request: Request,
    settings: ModelApiSettings,
    name: str,
    value: str,
    *,
    max_age: int,
    samesite: SameSite,
) -> None:
    response.set_cookie(
        name,
        value,
        max_age=max_age,
        path="/",
        httponly=True,
        samesite=samesite,
        secure=secure(request, settings),
    )


def delete_cookie(
    response: Response, request: Request, settings: ModelApiSettings, name: str, *, samesite: SameSite
) -> None:
    response.delete_cookie(name, path="/", httponly=True, samesite=samesite, secure=secure(request, settings))
