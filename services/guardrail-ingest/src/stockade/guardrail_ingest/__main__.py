"""``python -m stockade.guardrail_ingest``: run guardrail-ingest."""

from __future__ import annotations

from stockade.guardrail_ingest.main import create_app
from stockade.guardrail_ingest.settings import GuardrailIngestSettings
from stockade.runtime.http import serve
from stockade.runtime.logging import configure_logging


def main() -> None:
    settings = GuardrailIngestSettings()
    configure_logging(settings.service_name, settings.log.level, settings.log.json_format)
    serve(create_app(settings), settings)


if __name__ == "__main__":
    main()
