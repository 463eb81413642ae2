"""Counter stores behind rate limiting: in memory (one process) or NATS JetStream key-value (shared)."""

from stockade.guardrails.policies.counters.base import CounterStore
from stockade.guardrails.policies.counters.memory import InMemoryCounterStore
from stockade.guardrails.policies.counters.nats_kv import NatsKVCounterStore

__all__ = ["CounterStore", "InMemoryCounterStore", "NatsKVCounterStore"]
