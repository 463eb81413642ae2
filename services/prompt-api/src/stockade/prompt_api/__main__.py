"""``python -m stockade.prompt_api``: run prompt-api."""

from __future__ import annotations

from stockade.prompt_api.main import create_app
from stockade.prompt_api.settings import PromptApiSettings
from stockade.runtime.entrypoint import run_service


def main() -> None:
    run_service(PromptApiSettings, create_app)


if __name__ == "__main__":
    main()
