"""The run pages: filters, the reads through guardrail-ingest, charts and the pages themselves."""
