"""Typed dependencies of the routes."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from stockade.guardrail_ingest.ingest import Ingest


def get_ingest(request: Request) -> Ingest:
    ingest: Ingest = request.app.state.service.extras["ingest"]
    return ingest


IngestDep = Annotated[Ingest, Depends(get_ingest)]
