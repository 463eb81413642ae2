"""stockade.runtime: what every service repeats otherwise (settings, DB engine, NATS, logging, health)."""

from stockade.runtime.app import ServiceState, create_service_app
from stockade.runtime.db import create_engine, normalise_url, session_factory
from stockade.runtime.errors import error_body, error_response, install_error_handlers
from stockade.runtime.health import database_check, health_router, nats_check
from stockade.runtime.logging import configure_logging, redact
from stockade.runtime.nats import NatsUnavailableError, connect_nats, drain, nats_lifespan, serve_health
from stockade.runtime.settings import (
    DatabaseSettings,
    HttpSettings,
    LogSettings,
    NatsSettings,
    ServiceSettings,
)

__all__ = [
    "DatabaseSettings",
    "HttpSettings",
    "LogSettings",
    "NatsSettings",
    "NatsUnavailableError",
    "ServiceSettings",
    "ServiceState",
    "configure_logging",
    "connect_nats",
    "create_engine",
    "create_service_app",
    "database_check",
    "drain",
    "error_body",
    "error_response",
    "health_router",
    "install_error_handlers",
    "nats_check",
    "nats_lifespan",
    "normalise_url",
    "redact",
    "serve_health",
    "session_factory",
]
