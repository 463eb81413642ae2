"""trust-broker: verifies attested agent-to-agent messages on NATS and forwards them to the receiver's inbox."""

__all__: list[str] = []
