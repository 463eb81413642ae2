"""Pydantic message schemas and the single module naming every NATS subject and stream."""

__all__: list[str] = []
