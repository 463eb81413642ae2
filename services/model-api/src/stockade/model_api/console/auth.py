"""Sign-in and sign-out of the console (spec 5.2): form post, session cookie, rate limit on failures."""

from __future__ import annotations

import ipaddress
from datetime import timedelta

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from stockade.identity.sessions import end_session, start_session, verify_credentials
from stockade.identity.sign_in_limit import clear_sign_in_failures, reserve_sign_in_attempt
from stockade.model_api.body import read_form
from stockade.model_api.console import cookies
from stockade.model_api.console.pages import render
from stockade.model_api.deps import DbDep, MaybeUser, SettingsDep, check_same_origin, read_checked_form
from stockade.model_api.settings import ModelApiSettings
from stockade.runtime.storable import is_storable

router = APIRouter()
DEFAULT_NEXT = "/models"
WRONG = "Wrong e-mail or password."


def safe_next(value: str | None) -> str:
    """Only a local path: never another site (open redirect) and never a scheme-relative //host."""
    if not value or not value.startswith("/") or value.startswith("//") or "\\" in value or "\n" in value:
        return DEFAULT_NEXT
    return value


def _client(request: Request, settings: ModelApiSettings) -> str:
    """The address failures are counted against: the proxy's header if configured, else the TCP peer; an IPv6
    address counts as its /64 network (one host has a whole /64 to pick addresses from; review finding M1)."""
    header = settings.sign_in.client_ip_header
    if header and request.headers.get(header):
        host = request.headers[header].split(",")[-1].strip()
    else:
        host = request.client.host if request.client else ""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host[:64] or "unknown"
    if isinstance(address, ipaddress.IPv6Address):
        mapped = address.ipv4_mapped
        return str(mapped) if mapped else str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)


@router.get("/login")
async def login_page(request: Request, user: MaybeUser, next: str | None = None) -> Response:
    if user is not None:
        return RedirectResponse(safe_next(next), status_code=303)
    return render(request, "login.html", None, next=safe_next(next), email="", error=None)


@router.post("/login")
async def login(request: Request, db: DbDep, settings: SettingsDep) -> Response:
    check_same_origin(request, settings)
    form = await read_form(request, settings.limits.max_body_bytes)
    email, password, target = form.get("email").strip(), form.get("password"), safe_next(form.get("next"))
    if not is_storable(email):  # no account has it, and PostgreSQL cannot compare it: counted as no e-mail
        email = ""
    limits = settings.sign_in
    window = timedelta(seconds=limits.window_s)
    # The attempt counts as a failure before the password is checked (atomic under concurrent attempts).
    budget = await reserve_sign_in_attempt(
        db,
        email,
        _client(request, settings),
        window=window,
        max_per_email=limits.max_failures_per_email,
        max_per_client=limits.max_failures_per_client,
    )
    if not budget.allowed:
        minutes = max(1, round(budget.retry_after_s / 60))
        page = render(
            request,
            "login.html",
            None,
            429,
            next=target,
            email=email,
            error=f"Too many failed sign-ins. Try again in about {minutes} minute(s).",
        )
        page.headers["Retry-After"] = str(budget.retry_after_s)
        return page
    user = await verify_credentials(db, email, password) if email and password else None
    if user is None:  # the reserved attempt stays as the recorded failure
        return render(request, "login.html", None, 401, next=target, email=email, error=WRONG)
    await clear_sign_in_failures(db, email, older_than=window)
    ttl = timedelta(hours=settings.session.ttl_hours)
    started = await start_session(db, user.id, ttl)
    response = RedirectResponse(target, status_code=303)
    cookies.set_cookie(
        response,
        request,
        settings,
        settings.session.cookie_name,
        started.token,
        max_age=int(ttl.total_seconds()),
        samesite="lax",
    )
    return response


@router.post("/logout")
async def logout(request: Request, db: DbDep, settings: SettingsDep, user: MaybeUser) -> Response:
    if user is not None:
        await read_checked_form(request, settings)
        await end_session(db, request.cookies.get(settings.session.cookie_name))
    response = RedirectResponse("/login", status_code=303)
    cookies.delete_cookie(response, request, settings, settings.session.cookie_name, samesite="lax")
    return response
