"""The stockade command: up (embedded stack), doctor, admin."""

__all__: list[str] = []
