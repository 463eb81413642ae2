"""model-api: model catalogue and console."""

__all__: list[str] = []
