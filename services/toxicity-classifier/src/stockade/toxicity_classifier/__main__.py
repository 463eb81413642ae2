"""``python -m stockade.toxicity_classifier``: run toxicity-classifier."""

from __future__ import annotations

from stockade.runtime.http import serve
from stockade.runtime.logging import configure_logging
from stockade.toxicity_classifier.main import create_app
from stockade.toxicity_classifier.settings import ToxicityClassifierSettings


def main() -> None:
    settings = ToxicityClassifierSettings()
    configure_logging(settings.service_name, settings.log.level, settings.log.json_format)
    serve(create_app(settings), settings)


if __name__ == "__main__":
    main()
