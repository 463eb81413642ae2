"""trust-broker: verifies attested agent-to-agent messages on NATS."""

__all__: list[str] = []
