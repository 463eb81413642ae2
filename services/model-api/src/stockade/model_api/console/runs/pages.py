"""Console pages for guardrail runs: the runs list, one run's timeline, the overview, and the export.

Read-only, session sign-in like every console page, and scoped to the signed-in user: every read passes the
user's ``ProjectScope`` (their projects; docs/permissions.md), so a run of another project is the same 404 as
an unknown one and never appears in a list, chart or export. The reads are typed commands to guardrail-ingest,
which owns the run store (``run_store.RunStoreClient``). Bad filters answer 422 with the problems next to the
form; a store that cannot be read answers 503 with the reason; neither is ever a 500. An export streams: each
page is asked for while the previous one is sent, so memory holds one page whatever the export's size.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response, StreamingResponse

from stockade.contracts.run_store import ACTIONS
from stockade.model_api.catalogue import dbconfigs
from stockade.model_api.console.pages import render
from stockade.model_api.console.runs.charts import decision_bars, horizontal_bars
from stockade.model_api.console.runs.filters import FilterError, RunFilters, decode_cursor, parse_filters
from stockade.model_api.console.runs.store import (
    EXPORT_FIELDS,
    RunNotFound,
    RunStoreClient,
    RunStoreUnavailable,
)
from stockade.model_api.deps import DbDep, PageUser, RunStoreDep, ScopeDep, SettingsDep

router = APIRouter()
_RUN_ID = re.compile(r"^[^\x00-\x1f\x7f-\x9f]{1,256}$")
_FORMULA = ("=", "+", "-", "@", "\t", "\r")


async def _reader(db: DbDep, store: RunStoreDep) -> tuple[RunStoreClient, dict[str, Any]]:
    """The run store's client, and the active configuration's name and kind for the page header."""
    config = await dbconfigs.active_config(db)
    await db.commit()
    return store, {"name": config.name, "kind": config.db_type.value}


def _filters(request: Request) -> tuple[RunFilters | None, list[str], dict[str, str]]:
    params = dict(request.query_params)
    raw = {k: params.get(k, "") for k in ("project", "agent", "from", "to", "outcome", "check", "action")}
    try:
        return parse_filters(params), [], raw
    except FilterError as exc:
        return None, [f"{field}: {message}" for field, message in exc.problems], raw


def _form(filters: RunFilters | None, raw: dict[str, str]) -> dict[str, str]:
    """Values for the filter form: what was typed, with the effective time range filled in."""
    form = dict(raw)
    if filters is not None:
        form["from"] = raw.get("from") or f"{filters.since:%Y-%m-%dT%H:%M}"
        form["to"] = raw.get("to") or f"{filters.until:%Y-%m-%dT%H:%M}"
    return form


@router.get("/runs")
async def runs_page(
    request: Request,
    user: PageUser,
    scope: ScopeDep,
    db: DbDep,
    readers: RunStoreDep,
    settings: SettingsDep,
) -> Response:
    filters, errors, raw = _filters(request)
    context: dict[str, Any] = {
        "active": "runs",
        "form": _form(filters, raw),
        "actions": ACTIONS,
        "runs": None,
    }
    reader, context["store"] = await _reader(db, readers)
    if filters is not None:
        context["query"] = filters.query()
        try:
            cursor = decode_cursor(request.query_params.get("cursor"))
        except FilterError as exc:
            errors += [f"{f}: {m}" for f, m in exc.problems]
            cursor = None
    if errors or filters is None:
        return render(request, "runs.html", user, 422, errors=errors, **context)
    try:
        page = await reader.list_runs(scope, filters, cursor, settings.runs.page_size)
    except RunStoreUnavailable as exc:
        context["store"]["problem"] = str(exc)
        return render(request, "runs.html", user, 503, **context)
    context.update(
        runs=page.runs,
        paged=cursor is not None,
        next_query=filters.query(cursor=page.next_cursor.encode()) if page.next_cursor else None,
    )
    return render(request, "runs.html", user, **context)


@router.get("/runs/overview")
async def overview_page(
    request: Request, user: PageUser, scope: ScopeDep, db: DbDep, readers: RunStoreDep
) -> Response:
    filters, errors, raw = _filters(request)
    context: dict[str, Any] = {"active": "overview", "form": _form(filters, raw), "actions": ACTIONS}
    context["overview"] = None
    reader, context["store"] = await _reader(db, readers)
    if filters is None:
        return render(request, "runs_overview.html", user, 422, errors=errors, **context)
    context["query"] = filters.query()
    try:
        overview = await reader.overview(scope, filters, datetime.now(UTC))
    except RunStoreUnavailable as exc:
        context["store"]["problem"] = str(exc)
        return render(request, "runs_overview.html", user, 503, **context)
    charts = {
        name: decision_bars(overview.buckets, series, f"{name}: blocks and masks per bucket")
        for name, series in sorted(overview.decisions.items())
    }
    context.update(
        overview=overview,
        charts=charts,
        totals={
            n: (sum(b for b, _ in s.values()), sum(m for _, m in s.values()))
            for n, s in overview.decisions.items()
        },
        findings_chart=horizontal_bars(
            [(k, float(v)) for k, v in overview.top_findings], "Top finding types"
        ),
        latency_chart=horizontal_bars(
            [(name, p95) for name, _, _, p95, _ in overview.latency], "Check latency, 95th percentile", " ms"
        ),
        trust_chart=horizontal_bars(
            [(k, float(v)) for k, v in overview.trust_rejections], "Trust rejections"
        ),
    )
    return render(request, "runs_overview.html", user, **context)


@router.get("/runs/export.{fmt}")
async def export_events(
    request: Request,
    fmt: str,
    user: PageUser,
    scope: ScopeDep,
    db: DbDep,
    readers: RunStoreDep,
    settings: SettingsDep,
) -> Response:
    if fmt not in ("csv", "json"):
        return render(request, "error.html", user, 404, title="Not found", message="Export as .csv or .json.")
    filters, errors, _ = _filters(request)
    if filters is None:
        return render(request, "error.html", user, 422, title="Bad filter", message="; ".join(errors))
    reader, _ = await _reader(db, readers)
    pages = reader.export(scope, filters, settings.runs.max_export_events)
    try:
        # a store that cannot be read is a 503 before anything is sent
        first: list[dict[str, Any]] = await anext(pages, [])
    except RunStoreUnavailable as exc:
        return render(request, "error.html", user, 503, title="Run store unavailable", message=str(exc))
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    headers = {
        "Content-Disposition": f'attachment; filename="guardrail-events-{stamp}.{fmt}"',
        "Cache-Control": "no-store",
    }
    if fmt == "json":
        return StreamingResponse(
            _json_export(filters, first, pages), media_type="application/json", headers=headers
        )
    return StreamingResponse(_csv_export(first, pages), media_type="text/csv; charset=utf-8", headers=headers)


async def _rest(
    first: list[dict[str, Any]], pages: AsyncIterator[list[dict[str, Any]]]
) -> AsyncIterator[tuple[list[dict[str, Any]], str | None]]:
    """The pages, first included; a read failing midway ends the export with its reason (the status is sent)."""
    yield first, None
    try:
        async for page in pages:
            yield page, None
    except RunStoreUnavailable as exc:
        yield [], str(exc)


async def _json_export(
    filters: RunFilters, first: list[dict[str, Any]], pages: AsyncIterator[list[dict[str, Any]]]
) -> AsyncIterator[bytes]:
    """``{"filters": ..., "events": [...], "complete": bool}``, written page by page."""
    yield b'{"filters": ' + json.dumps(filters.query()).encode() + b', "events": ['
    sep, failed = b"", None
    async for page, problem in _rest(first, pages):
        for row in page:
            yield sep + json.dumps(row, ensure_ascii=False, default=str).encode()
            sep = b", "
        failed = failed or problem
    tail = {"complete": failed is None, **({"error": failed} if failed else {})}
    yield b"], " + json.dumps(tail)[1:].encode()


async def _csv_export(
    first: list[dict[str, Any]], pages: AsyncIterator[list[dict[str, Any]]]
) -> AsyncIterator[bytes]:
    """The header row, then one page of rows at a time (a failing read ends it with a line saying so)."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(EXPORT_FIELDS)
    async for page, problem in _rest(first, pages):
        for row in page:
            writer.writerow([_cell(row.get(f)) for f in EXPORT_FIELDS])
        if problem:
            writer.writerow([f"# export incomplete: {problem}"])
        yield out.getvalue().encode()
        out.seek(0)
        out.truncate()


def _cell(value: Any) -> str:
    """A CSV cell; text a spreadsheet would run as a formula gets a leading apostrophe."""
    if value is None:
        return ""
    text = json.dumps(value, sort_keys=True) if isinstance(value, dict | list) else str(value)
    return "'" + text if text.startswith(_FORMULA) and not _is_number(text) else text


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


@router.get("/run/{run_id:path}")
async def run_page(
    request: Request, run_id: str, user: PageUser, scope: ScopeDep, db: DbDep, readers: RunStoreDep
) -> Response:
    project = request.query_params.get("project") or None
    context: dict[str, Any] = {"active": "runs", "run": None, "run_id": run_id}
    reader, context["store"] = await _reader(db, readers)
    if not _RUN_ID.match(run_id) or (project is not None and not _RUN_ID.match(project)):
        return render(request, "run.html", user, 404, errors=[f"no stored run {run_id!r}"], **context)
    try:
        context["run"] = await reader.run(scope, run_id, project)
    except RunNotFound:
        return render(request, "run.html", user, 404, errors=[f"no stored run {run_id!r}"], **context)
    except RunStoreUnavailable as exc:
        context["store"]["problem"] = str(exc)
        return render(request, "run.html", user, 503, **context)
    return render(request, "run.html", user, **context)
