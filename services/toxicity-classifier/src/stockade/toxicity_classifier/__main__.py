"""``python -m stockade.toxicity_classifier``: run toxicity-classifier."""

from __future__ import annotations

from stockade.runtime.entrypoint import run_service
from stockade.toxicity_classifier.main import create_app
from stockade.toxicity_classifier.settings import ToxicityClassifierSettings


def main() -> None:
    run_service(ToxicityClassifierSettings, create_app)


if __name__ == "__main__":
    main()
