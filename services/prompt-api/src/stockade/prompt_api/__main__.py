"""``python -m stockade.prompt_api``: serve prompt-api with the settings from the environment."""

from stockade.prompt_api.main import create_app
from stockade.prompt_api.settings import PromptApiSettings
from stockade.runtime.http import serve


def main() -> None:
    settings = PromptApiSettings()
    serve(create_app(settings), settings)


if __name__ == "__main__":
    main()
