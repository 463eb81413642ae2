"""Settings base, DB engine factory, NATS lifespan, JSON logging, health helpers shared by every service."""

__all__: list[str] = []
