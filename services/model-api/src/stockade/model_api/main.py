"""Composition root of model-api: settings in, app out. Nothing connects at import time.

The lifespan (from ``stockade.runtime.app``) builds the engine and the NATS connection; the startup hook runs the
migrations, starts the outbox relay (events to JetStream after the commit) and answers ``model.cmd.get.v1``,
``dbconfig.cmd.active.v1`` and ``apikey.cmd.verify_ingest.v1``.
"""

from __future__ import annotations

import httpx
from fastapi import FastAPI, Request
from fastapi.responses import RedirectResponse, Response
from fastapi.staticfiles import StaticFiles

from stockade.contracts import subjects
from stockade.identity import IdentityError, NotFoundError
from stockade.model_api import migrate
from stockade.model_api.catalogue import api
from stockade.model_api.catalogue.commands import declare_commands
from stockade.model_api.console import auth
from stockade.model_api.console import models as model_pages
from stockade.model_api.console import settings as settings_pages
from stockade.model_api.console.pages import STATIC_DIR, TEMPLATES
from stockade.model_api.console.policies import pages as policy_pages
from stockade.model_api.console.policies import reviews as policy_review_pages
from stockade.model_api.console.prompts import pages as prompt_pages
from stockade.model_api.console.prompts import reviews as review_pages
from stockade.model_api.console.prompts.shared import ShowInstead
from stockade.model_api.console.runs import pages as run_pages
from stockade.model_api.console.runs.store import RunStoreClient
from stockade.model_api.deps import CsrfFailed, ModelApiState, NotPermitted, SignInRequired
from stockade.model_api.errors import CatalogueError, ConfigConflict
from stockade.model_api.settings import ModelApiSettings
from stockade.model_api.tables import OutboxEvent
from stockade.runtime import outbox
from stockade.runtime.app import ServiceState, create_service_app
from stockade.runtime.errors import error_response

# The console's pages load the service's own script and styles: its policy replaces the API default (which
# allows nothing); the other headers are stockade.runtime's defaults.
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'; "
    "object-src 'none'",
    "Referrer-Policy": "same-origin",
}


def create_app(settings: ModelApiSettings | None = None) -> FastAPI:
    settings = settings or ModelApiSettings()

    async def on_startup(state: ServiceState[ModelApiState]) -> ModelApiState:
        if settings.migrate_on_startup:
            await migrate.upgrade_async(settings.db.url)
        assert state.sessions is not None
        own = ModelApiState(
            run_store=RunStoreClient(lambda: state.nats, settings.runs),
            prompt_api_http=httpx.AsyncClient(
                base_url=settings.prompt_api.url,
                timeout=settings.prompt_api.timeout_s,
                follow_redirects=False,
            ),
            relay=outbox.OutboxRelay(  # over the service's own NATS connection (the relay does not drain it)
                state.sessions,
                OutboxEvent,
                outbox.given_connection(state.nats),
                settings.outbox,
                replicas=settings.nats.stream_replicas,
            ),
        )
        if settings.outbox.enabled:
            own.relay.start()
        if state.broker is not None:
            declare_commands(state.broker, state.sessions)  # started by the lifespan after this hook
        return own

    async def on_shutdown(own: ModelApiState) -> None:
        await own.relay.stop()
        await own.prompt_api_http.aclose()

    app = create_service_app(
        settings,
        title="model-api: model catalogue and console",
        health_subject=subjects.MODEL_HEALTH,
        on_startup=on_startup,
        on_shutdown=on_shutdown,
        security_headers=SECURITY_HEADERS,
        docs=False,  # the console's origin runs no CDN script: MODEL_API_HTTP__DOCS=true turns them on
    )
    _install_handlers(app)

    app.mount("/static", StaticFiles(directory=str(STATIC_DIR)), name="static")
    for module in (
        auth,
        api,
        model_pages,
        settings_pages,
        run_pages,
        prompt_pages,
        review_pages,
        policy_pages,
        policy_review_pages,
    ):
        app.include_router(module.router)
    return app


def _wants_json(request: Request) -> bool:
    return request.url.path.startswith("/api/")


def _install_handlers(app: FastAPI) -> None:
    async def sign_in_required(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, SignInRequired)
        return RedirectResponse(exc.location, status_code=303)

    async def csrf_failed(request: Request, exc: Exception) -> Response:
        if _wants_json(request):
            return error_response(403, "csrf_failed", str(exc))
        page = TEMPLATES.TemplateResponse(
            request,
            "error.html",
            {"user": None, "csrf_token": "", "title": "Request refused", "message": str(exc)},
            status_code=403,
        )
        return page

    async def not_permitted(request: Request, exc: Exception) -> Response:
        if _wants_json(request):
            return error_response(403, "forbidden", str(exc))
        return TEMPLATES.TemplateResponse(
            request,
            "error.html",
            {"user": None, "csrf_token": "", "title": "Not permitted", "message": str(exc)},
            status_code=403,
        )

    async def catalogue_error(request: Request, exc: Exception) -> Response:
        status, code = (409, "conflict") if isinstance(exc, ConfigConflict) else (404, "not_found")
        return error_response(status, code, str(exc))

    async def identity_error(request: Request, exc: Exception) -> Response:
        status, code = (404, "not_found") if isinstance(exc, NotFoundError) else (422, "invalid_request")
        return error_response(status, code, str(exc))

    async def show_instead(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, ShowInstead)
        return exc.response

    app.add_exception_handler(SignInRequired, sign_in_required)
    app.add_exception_handler(ShowInstead, show_instead)
    app.add_exception_handler(CsrfFailed, csrf_failed)
    app.add_exception_handler(NotPermitted, not_permitted)
    app.add_exception_handler(CatalogueError, catalogue_error)
    app.add_exception_handler(IdentityError, identity_error)
