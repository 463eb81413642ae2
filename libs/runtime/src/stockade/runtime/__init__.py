"""stockade.runtime: what every service repeats otherwise (settings, DB engine, unit of work, outbox, bus,
logging, health). Import from the submodules (``stockade.runtime.db``, ``.uow``, ``.outbox``, ``.settings``, ...):
the package itself imports nothing, so ``python -m stockade.runtime.probe`` (a container health check) starts
fast.
"""
