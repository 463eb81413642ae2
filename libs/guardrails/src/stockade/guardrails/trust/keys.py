"""KeyRing: the HMAC secrets of every agent, by key id (several active keys per agent for rotation).

Secrets are resolved once, when the ring is built, from inline ``SecretStr`` values, environment variables or
files. They are held as ``SecretStr`` and never appear in ``repr``, ``str`` or log output.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Mapping

from pydantic import SecretStr

from stockade.guardrails.errors import ConfigError
from stockade.guardrails.trust.config import AgentKeyConfig, AttestationConfig, TrustConfig


class KeyRing:
    """``agent id -> key id -> secret`` plus each agent's signing key id."""

    def __init__(
        self,
        keys: Mapping[str, Mapping[str, SecretStr | str | bytes]],
        *,
        signing_keys: Mapping[str, str] | None = None,
        min_secret_bytes: int = 32,
    ) -> None:
        self._keys: dict[str, dict[str, bytes]] = {}
        self._macs: dict[str, dict[str, hmac.HMAC]] = {}
        self._signing: dict[str, str] = {}
        for agent, by_id in keys.items():
            resolved: dict[str, bytes] = {}
            for key_id, secret in by_id.items():
                raw = _raw(secret)
                if len(raw) < min_secret_bytes:
                    raise ConfigError(
                        f"agent {agent!r} key {key_id!r}: secret is {len(raw)} bytes, "
                        f"at least {min_secret_bytes} are required"
                    )
                resolved[key_id] = raw
            self._keys[agent] = resolved
            # Keyed HMAC-SHA256 states, copied per message: the key schedule runs once per key, not per call.
            self._macs[agent] = {
                kid: hmac.new(raw, digestmod=hashlib.sha256) for kid, raw in resolved.items()
            }
            chosen = (signing_keys or {}).get(agent) or next(iter(resolved), None)
            if chosen is not None:
                self._signing[agent] = chosen

    def secret(self, agent_id: str, key_id: str) -> bytes | None:
        """The secret of one key, or None when the agent has no such active key."""
        return self._keys.get(agent_id, {}).get(key_id)

    def mac(self, agent_id: str, key_id: str) -> hmac.HMAC | None:
        """A fresh HMAC-SHA256 keyed with that key (a copy of a cached state), or None when there is none."""
        by_id = self._macs.get(agent_id)
        base = by_id.get(key_id) if by_id is not None else None
        return base.copy() if base is not None else None

    def signing_key_id(self, agent_id: str) -> str | None:
        return self._signing.get(agent_id)

    def key_ids(self, agent_id: str) -> list[str]:
        return list(self._keys.get(agent_id, {}))

    def __repr__(self) -> str:
        counts = ", ".join(f"{a}: {len(k)} key(s)" for a, k in self._keys.items())
        return f"KeyRing({counts})"

    @classmethod
    def from_config(cls, config: TrustConfig, *, environ: Mapping[str, str] | None = None) -> KeyRing:
        env = os.environ if environ is None else environ
        keys: dict[str, dict[str, SecretStr | str | bytes]] = {}
        signing: dict[str, str] = {}
        for i, agent in enumerate(config.agents):
            keys[agent.id] = {
                k.id: _resolve(k, f"guardrails.trust.agents.{i}.keys.{j}", env, config.attestation)
                for j, k in enumerate(agent.keys)
            }
            if agent.signing_key:
                signing[agent.id] = agent.signing_key
        return cls(keys, signing_keys=signing, min_secret_bytes=config.attestation.min_secret_bytes)


def _raw(secret: SecretStr | str | bytes) -> bytes:
    if isinstance(secret, SecretStr):
        return secret.get_secret_value().encode("utf-8")
    if isinstance(secret, str):
        return secret.encode("utf-8")
    return secret


def _resolve(key: AgentKeyConfig, where: str, env: Mapping[str, str], limits: AttestationConfig) -> bytes:
    if key.secret is not None:
        raw = key.secret.get_secret_value().encode("utf-8")
    elif key.secret_env is not None:
        value = env.get(key.secret_env)
        if value is None:
            raise ConfigError(f"{where}.secret_env: environment variable {key.secret_env} is not set")
        raw = value.encode("utf-8")
    else:
        assert key.secret_file is not None
        try:
            raw = key.secret_file.read_bytes().rstrip(b"\r\n")
        except OSError as exc:
            raise ConfigError(f"{where}.secret_file: cannot read {key.secret_file}: {exc.strerror}") from None
    if len(raw) < limits.min_secret_bytes:
        raise ConfigError(
            f"{where}: secret is {len(raw)} bytes, at least {limits.min_secret_bytes} are required "
            "(guardrails.trust.attestation.min_secret_bytes)"
        )
    return raw
