"""/healthz (the process is alive) and /readyz (every dependency answers) for HTTP services."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from nats.aio.client import Client as NatsClient
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

ReadinessCheck = Callable[[], Awaitable[None]]


def health_router(service: str, checks: Callable[[], dict[str, ReadinessCheck]]) -> APIRouter:
    """``checks`` is called per request so it sees the dependencies the lifespan created."""
    router = APIRouter(tags=["health"])

    @router.get("/healthz", include_in_schema=False)
    async def healthz() -> dict[str, str]:
        return {"status": "ok", "service": service}

    @router.get("/readyz", include_in_schema=False)
    async def readyz() -> JSONResponse:
        results: dict[str, str] = {}
        ok = True
        for name, check in checks().items():
            try:
                await asyncio.wait_for(check(), timeout=2.0)
                results[name] = "ok"
            except Exception as exc:
                ok = False
                results[name] = f"unavailable: {type(exc).__name__}"
        status = "ok" if ok else "unavailable"
        return JSONResponse(
            {"status": status, "service": service, "checks": results}, status_code=200 if ok else 503
        )

    return router


def database_check(engine: AsyncEngine) -> ReadinessCheck:
    async def check() -> None:
        async with engine.connect() as conn:
            await conn.execute(text("SELECT 1"))

    return check


def nats_check(nc: NatsClient) -> ReadinessCheck:
    async def check() -> None:
        if not nc.is_connected:
            raise ConnectionError("NATS not connected")
        await nc.flush(timeout=1)

    return check
