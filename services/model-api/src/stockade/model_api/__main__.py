"""``python -m stockade.model_api``: run model-api."""

from __future__ import annotations

from stockade.model_api.main import create_app
from stockade.model_api.settings import ModelApiSettings
from stockade.runtime.http import serve
from stockade.runtime.logging import configure_logging


def main() -> None:
    settings = ModelApiSettings()
    configure_logging(settings.service_name, settings.log.level, settings.log.json_format)
    serve(create_app(settings), settings)


if __name__ == "__main__":
    main()
