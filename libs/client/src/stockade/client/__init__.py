"""Python client of prompt-api for agents."""

__all__: list[str] = []
