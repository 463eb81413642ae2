"""Server-rendered console pages: one Jinja2 environment (autoescaped), security headers, no caching."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates

from stockade.identity.sessions import SessionPrincipal
from stockade.model_api.catalogue.vocabulary import CURRENCY, Capability, DbType, ModelType

TEMPLATES = Jinja2Templates(directory=str(Path(__file__).parent / "templates"))
STATIC_DIR = Path(__file__).parent / "static"


def _price(value: Decimal | None) -> str:
    return "" if value is None else f"{value:f}"


def _tokens(value: int | None) -> str:
    return "" if value is None else f"{value:,}"


TEMPLATES.env.filters["price"] = _price
TEMPLATES.env.filters["tokens"] = _tokens
TEMPLATES.env.globals.update(
    currency=CURRENCY,
    model_types=[t.value for t in ModelType],
    capabilities=[c.value for c in Capability],
    db_types=[t.value for t in DbType],
)


def render(
    request: Request,
    template: str,
    user: SessionPrincipal | None,
    status_code: int = 200,
    **context: Any,
) -> HTMLResponse:
    response = TEMPLATES.TemplateResponse(
        request,
        template,
        {"user": user, "csrf_token": user.csrf_token if user else "", **context},
        status_code=status_code,
    )
    response.headers["Cache-Control"] = "no-store"
    return response
