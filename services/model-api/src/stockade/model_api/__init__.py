"""model-api: the model catalogue behind a browser console with session sign-in."""

__all__: list[str] = []
