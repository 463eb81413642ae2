"""Column types shared by Stockade's tables; they live in ``stockade.runtime.db_types`` (the outbox there needs
them and the runtime must not import identity). Re-exported here for the services that import them from here."""

from stockade.runtime.db_types import UtcDateTime, new_id, utcnow

__all__ = ["UtcDateTime", "new_id", "utcnow"]
