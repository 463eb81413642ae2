"""Console page for the catalogue: models grouped by provider; add, edit and delete with plain forms."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from pydantic import ValidationError

from stockade.model_api.body import Form
from stockade.model_api.catalogue import actions, dbconfigs
from stockade.model_api.catalogue import models as catalogue
from stockade.model_api.catalogue.schemas import ModelUpsert
from stockade.model_api.console.pages import render
from stockade.model_api.deps import DbDep, PageUser, RelayDep, SettingsDep, read_checked_form
from stockade.model_api.errors import ModelNotFound

router = APIRouter()
NOTICES = {"updated": "Saved {model}.", "created": "Added {model}.", "deleted": "Deleted {model}."}


def _form_to_body(form: Form) -> dict[str, Any]:
    def optional(name: str) -> str | None:
        value = form.get(name).strip()
        return value or None

    window = optional("contextWindow")
    model: dict[str, Any] = {
        "model_id": form.get("model_id").strip(),
        "displayName": form.get("displayName"),
        "modelType": form.get("modelType"),
        "contextWindow": int(window) if window and window.isdigit() else window,
        "inputPricePerMToken": optional("inputPricePerMToken"),
        "outputPricePerMToken": optional("outputPricePerMToken"),
        "capabilities": form.values("capabilities"),
    }
    if optional("id"):
        model["id"] = optional("id")
    body: dict[str, Any] = {"provider": form.get("provider"), "model": model}
    effective = _effective_at(optional("effectiveAt"))
    if effective is not None:
        body["effectiveAt"] = effective
    return body


def _effective_at(text: str | None) -> str | None:
    """The form's "prices effective from" as ISO text. The browser's datetime-local field sends no zone: the
    console shows UTC, so a time without one is UTC. Unreadable text goes on as typed: the schema names it."""
    if text is None:
        return None
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return text
    return _utc(when).isoformat()


def _utc(when: datetime) -> datetime:
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


def _history_rows(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The price history for the edit form, oldest first, each marked in force, past or scheduled."""
    now = datetime.now(UTC)
    rows = [{**h, "at": _utc(datetime.fromisoformat(str(h["effectiveAt"])))} for h in history]
    current = max((i for i, r in enumerate(rows) if r["at"] <= now), default=None)
    for i, r in enumerate(rows):
        r["state"] = "scheduled" if r["at"] > now else "in force" if i == current else "past"
    return rows


def _problems(exc: ValidationError) -> list[str]:
    out = []
    for err in exc.errors(include_url=False, include_input=False):
        field = ".".join(str(p) for p in err["loc"] if p != "model") or "form"
        out.append(f"{field}: {err['msg']}")
    return out


async def _page(
    request: Request, user: PageUser, db: DbDep, status_code: int = 200, **extra: Any
) -> Response:
    config = await dbconfigs.active_config(db)
    groups = await catalogue.list_models(db, config.id)
    notice = None
    done, name = request.query_params.get("done"), request.query_params.get("model", "")
    if done in NOTICES:
        notice = NOTICES[done].format(model=name)
    context: dict[str, Any] = {"config": config, "groups": groups, "notice": notice, "errors": [], "form": {}}
    context.update(extra)
    return render(request, "models.html", user, status_code, **context)


@router.get("/")
async def home(user: PageUser) -> Response:
    return RedirectResponse("/models", status_code=303)


@router.get("/models")
async def models_page(request: Request, user: PageUser, db: DbDep) -> Response:
    form: dict[str, Any] = {}
    edit_provider, edit_model = request.query_params.get("provider"), request.query_params.get("model_id")
    if edit_provider and edit_model:
        config = await dbconfigs.active_config(db)
        try:
            found = await catalogue.get_model(db, config.id, edit_provider, edit_model)
        except ModelNotFound:
            return await _page(
                request, user, db, 404, errors=[f"No model {edit_model!r} of {edit_provider!r}."]
            )
        form = {"provider": found.provider, "editing": True, **found.record()}
        form["inputPricePerMToken"] = "" if found.input_price is None else f"{found.input_price:f}"
        form["outputPricePerMToken"] = "" if found.output_price is None else f"{found.output_price:f}"
        history = await catalogue.price_history(db, config.id, found.provider, found.model_id)
        return await _page(request, user, db, form=form, history=_history_rows(history))
    return await _page(request, user, db, form=form)


@router.post("/models")
async def save_model(
    request: Request, user: PageUser, db: DbDep, relay: RelayDep, settings: SettingsDep
) -> Response:
    form = await read_checked_form(request, settings)
    raw = _form_to_body(form)
    try:
        body = ModelUpsert.model_validate(raw)
    except ValidationError as exc:
        kept = {"provider": raw["provider"], **raw["model"], "capabilities": form.values("capabilities")}
        kept["editing"] = form.get("editing") == "1"
        kept["effectiveAt"] = form.get("effectiveAt")
        return await _page(request, user, db, 422, errors=_problems(exc), form=kept)
    _, saved = await actions.save_model(
        db, relay, body.provider, body.model, actor=user.user.id, effective_at=body.effective_at
    )
    query = urlencode({"done": saved.change, "model": f"{body.provider}/{saved.model.model_id}"})
    return RedirectResponse(f"/models?{query}", status_code=303)


@router.post("/models/delete")
async def delete_model(
    request: Request, user: PageUser, db: DbDep, relay: RelayDep, settings: SettingsDep
) -> Response:
    form = await read_checked_form(request, settings)
    provider, model_id = form.get("provider"), form.get("model_id")
    try:
        await actions.remove_model(db, relay, provider, model_id, actor=user.user.id)
    except ModelNotFound as exc:
        return await _page(request, user, db, 404, errors=[str(exc)])
    query = urlencode({"done": "deleted", "model": f"{provider}/{model_id}"})
    return RedirectResponse(f"/models?{query}", status_code=303)
