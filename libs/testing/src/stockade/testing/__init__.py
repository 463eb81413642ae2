"""Private pytest plugin: real-server fixtures (PostgreSQL, NATS, ClickHouse/chdb, DynamoDB, MongoDB)."""

__all__: list[str] = []
