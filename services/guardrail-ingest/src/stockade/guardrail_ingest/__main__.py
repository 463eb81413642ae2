"""``python -m stockade.guardrail_ingest``: run guardrail-ingest."""

from __future__ import annotations

from stockade.guardrail_ingest.main import create_app
from stockade.guardrail_ingest.settings import GuardrailIngestSettings
from stockade.runtime.entrypoint import run_service


def main() -> None:
    run_service(GuardrailIngestSettings, create_app)


if __name__ == "__main__":
    main()
