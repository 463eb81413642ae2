"""stockade.runtime: what every service repeats otherwise (settings, DB engine, NATS, logging, health, outbox).

Exports load lazily, so ``python -m stockade.runtime.probe`` (a container health check) starts fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from stockade.runtime.app import ServiceState, create_service_app, service_of, service_state
    from stockade.runtime.db import create_engine, normalise_url, session_factory
    from stockade.runtime.errors import error_body, error_response, install_error_handlers
    from stockade.runtime.health import database_check, health_router, nats_check
    from stockade.runtime.logging import configure_logging, redact
    from stockade.runtime.nats import (
        LazyNatsConnection,
        NatsUnavailableError,
        connect_nats,
        drain,
        nats_lifespan,
        serve_health,
    )
    from stockade.runtime.outbox import OutboxColumns, OutboxRelay, enqueue, given_connection
    from stockade.runtime.security_headers import install_security_headers
    from stockade.runtime.settings import (
        DatabaseSettings,
        HttpSettings,
        LogSettings,
        NatsSettings,
        OutboxSettings,
        ServiceSettings,
    )

_EXPORTS = {
    "ServiceState": "app",
    "create_service_app": "app",
    "service_of": "app",
    "service_state": "app",
    "create_engine": "db",
    "normalise_url": "db",
    "session_factory": "db",
    "error_body": "errors",
    "error_response": "errors",
    "install_error_handlers": "errors",
    "database_check": "health",
    "health_router": "health",
    "nats_check": "health",
    "configure_logging": "logging",
    "redact": "logging",
    "LazyNatsConnection": "nats",
    "NatsUnavailableError": "nats",
    "connect_nats": "nats",
    "drain": "nats",
    "nats_lifespan": "nats",
    "serve_health": "nats",
    "OutboxColumns": "outbox",
    "OutboxRelay": "outbox",
    "enqueue": "outbox",
    "given_connection": "outbox",
    "install_security_headers": "security_headers",
    "DatabaseSettings": "settings",
    "HttpSettings": "settings",
    "LogSettings": "settings",
    "NatsSettings": "settings",
    "OutboxSettings": "settings",
    "ServiceSettings": "settings",
}

__all__ = [
    "DatabaseSettings",
    "HttpSettings",
    "LazyNatsConnection",
    "LogSettings",
    "NatsSettings",
    "NatsUnavailableError",
    "OutboxColumns",
    "OutboxRelay",
    "OutboxSettings",
    "ServiceSettings",
    "ServiceState",
    "configure_logging",
    "connect_nats",
    "create_engine",
    "create_service_app",
    "database_check",
    "drain",
    "enqueue",
    "error_body",
    "error_response",
    "given_connection",
    "health_router",
    "install_error_handlers",
    "install_security_headers",
    "nats_check",
    "nats_lifespan",
    "normalise_url",
    "redact",
    "serve_health",
    "service_of",
    "service_state",
    "session_factory",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'stockade.runtime' has no attribute {name!r}")
    return getattr(importlib.import_module(f"stockade.runtime.{module}"), name)
