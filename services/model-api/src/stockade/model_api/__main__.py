"""``python -m stockade.model_api``: run model-api."""

from __future__ import annotations

from stockade.model_api.main import create_app
from stockade.model_api.settings import ModelApiSettings
from stockade.runtime.entrypoint import run_service


def main() -> None:
    run_service(ModelApiSettings, create_app)


if __name__ == "__main__":
    main()
