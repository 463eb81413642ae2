"""The ``python -m stockade.<service>`` of a service: settings from the environment, logging, then serve."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from fastapi import FastAPI

from stockade.runtime.http import serve
from stockade.runtime.logging import configure_logging
from stockade.runtime.settings import ServiceSettings

S = TypeVar("S", bound=ServiceSettings)


def run_service(settings_type: Callable[[], S], create_app: Callable[[S], FastAPI]) -> None:
    """Blocking: read the settings, configure logging from them, serve ``create_app(settings)`` until stopped."""
    settings = settings_type()
    configure_logging(settings.service_name, settings.log.level, settings.log.json_format)
    serve(create_app(settings), settings)
