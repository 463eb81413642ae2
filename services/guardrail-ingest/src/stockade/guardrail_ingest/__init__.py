"""guardrail-ingest: receives guardrail run events and fans them out to MongoDB, DynamoDB or ClickHouse."""

__all__: list[str] = []
