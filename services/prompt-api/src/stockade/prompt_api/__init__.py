"""prompt-api: versioned prompts and agent skills per project for API-key holders."""

__all__: list[str] = []
