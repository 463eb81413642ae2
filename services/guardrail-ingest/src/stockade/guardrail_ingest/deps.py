"""Typed dependencies of the routes."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from stockade.guardrail_ingest.ingest import Ingest
from stockade.guardrail_ingest.state import IngestState
from stockade.runtime.app import service_of


def get_ingest(request: Request) -> Ingest:
    return service_of(request, IngestState).ingest


IngestDep = Annotated[Ingest, Depends(get_ingest)]
