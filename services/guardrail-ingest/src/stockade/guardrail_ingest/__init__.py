"""guardrail-ingest: guardrail run events to the configured store."""

__all__: list[str] = []
