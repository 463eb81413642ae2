"""Console pages for guardrail runs: the runs list, one run's timeline, the overview, and the export.

Read-only, session sign-in like every console page, and scoped to the signed-in user: every read passes the
user's ``ProjectScope`` (their projects; docs/permissions.md), so a run of another project is the same 404 as
an unknown one and never appears in a list, chart or export. Bad filters answer 422 with the problems next to the
form; a store the console cannot read answers 503 with the reason; neither is ever a 500.
"""

from __future__ import annotations

import csv
import io
import json
import re
from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from stockade.model_api import dbconfigs
from stockade.model_api.deps import DbDep, PageUser, RunReadersDep, ScopeDep, SettingsDep
from stockade.model_api.pages import render
from stockade.model_api.run_charts import decision_bars, horizontal_bars
from stockade.model_api.run_filters import ACTIONS, FilterError, RunFilters, decode_cursor, parse_filters
from stockade.model_api.run_store import EXPORT_FIELDS, RunNotFound, RunReader, RunStoreUnavailable

router = APIRouter()
_RUN_ID = re.compile(r"^[^\x00-\x1f\x7f]{1,256}$")
_FORMULA = ("=", "+", "-", "@", "\t", "\r")


async def _reader(db: DbDep, readers: RunReadersDep) -> tuple[RunReader | None, dict[str, Any]]:
    config = await dbconfigs.active_config(db)
    await db.commit()
    store = {"name": config.name, "kind": config.db_type.value}
    try:
        return readers.for_kind(config.db_type.value), store
    except RunStoreUnavailable as exc:
        store["problem"] = str(exc)
        return None, store


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
    readers: RunReadersDep,
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
    if reader is None:
        return render(request, "runs.html", user, 503, **context)
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
    request: Request, user: PageUser, scope: ScopeDep, db: DbDep, readers: RunReadersDep
) -> Response:
    filters, errors, raw = _filters(request)
    context: dict[str, Any] = {"active": "overview", "form": _form(filters, raw), "actions": ACTIONS}
    context["overview"] = None
    reader, context["store"] = await _reader(db, readers)
    if filters is None:
        return render(request, "runs_overview.html", user, 422, errors=errors, **context)
    context["query"] = filters.query()
    if reader is None:
        return render(request, "runs_overview.html", user, 503, **context)
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
    readers: RunReadersDep,
    settings: SettingsDep,
) -> Response:
    if fmt not in ("csv", "json"):
        return render(request, "error.html", user, 404, title="Not found", message="Export as .csv or .json.")
    filters, errors, _ = _filters(request)
    if filters is None:
        return render(request, "error.html", user, 422, title="Bad filter", message="; ".join(errors))
    reader, store = await _reader(db, readers)
    try:
        if reader is None:
            raise RunStoreUnavailable(store["problem"])
        rows = await reader.export(scope, filters, settings.runs.max_export_events)
    except RunStoreUnavailable as exc:
        return render(request, "error.html", user, 503, title="Run store unavailable", message=str(exc))
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    headers = {
        "Content-Disposition": f'attachment; filename="guardrail-events-{stamp}.{fmt}"',
        "Cache-Control": "no-store",
        "X-Export-Truncated": "true" if len(rows) >= settings.runs.max_export_events else "false",
    }
    if fmt == "json":
        body = json.dumps({"filters": filters.query(), "events": rows}, ensure_ascii=False, default=str)
        return Response(body, media_type="application/json", headers=headers)
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(EXPORT_FIELDS)
    for row in rows:
        writer.writerow([_cell(row.get(f)) for f in EXPORT_FIELDS])
    return Response(out.getvalue(), media_type="text/csv; charset=utf-8", headers=headers)


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
    request: Request, run_id: str, user: PageUser, scope: ScopeDep, db: DbDep, readers: RunReadersDep
) -> Response:
    project = request.query_params.get("project") or None
    context: dict[str, Any] = {"active": "runs", "run": None, "run_id": run_id}
    reader, context["store"] = await _reader(db, readers)
    if not _RUN_ID.match(run_id) or (project is not None and not _RUN_ID.match(project)):
        return render(request, "run.html", user, 404, errors=[f"no stored run {run_id!r}"], **context)
    if reader is None:
        return render(request, "run.html", user, 503, **context)
    try:
        context["run"] = await reader.run(scope, run_id, project)
    except RunNotFound:
        return render(request, "run.html", user, 404, errors=[f"no stored run {run_id!r}"], **context)
    except RunStoreUnavailable as exc:
        context["store"]["problem"] = str(exc)
        return render(request, "run.html", user, 503, **context)
    return render(request, "run.html", user, **context)
