"""Keeps the current AgentTrustEnforcer, rebuilt from the config file when it changes (no restart).

A reload that fails (bad YAML, missing secret) keeps the previous enforcer and reports the error; the broker
never runs without a valid registry. The nonce store is shared across reloads, so a reload never re-opens a
replay window: a reload whose nonce retention (freshness window + 2 x clock skew) is longer than the store keeps
nonces (the JetStream bucket's TTL, fixed at start) is refused, since a message replayed after the bucket forgot
its nonce but within the new window would be accepted (review L1). Restart the broker to widen the window.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from pathlib import Path

from stockade.guardrails.errors import ConfigError
from stockade.guardrails.trust import (
    AgentTrustEnforcer,
    ContentValidator,
    NonceStore,
    TrustConfig,
    trust_config_from_path,
)

log = logging.getLogger(__name__)


def _modified(path: Path) -> float | None:
    try:
        return path.stat().st_mtime_ns / 1e9
    except OSError:
        return None


@dataclass(frozen=True)
class TrustFile:
    """The trust configuration as read from ``path``, and the file's modification time taken before the read (a
    change made while it was read is seen by the next :meth:`EnforcerProvider.reload_if_changed`)."""

    path: Path
    config: TrustConfig
    modified: float | None

    @classmethod
    def read(cls, path: Path) -> TrustFile:
        modified = _modified(path)
        return cls(path, trust_config_from_path(path), modified)


class EnforcerProvider:
    """``provider.current`` is the enforcer to use for the next message. ``path``: the trust file, or the
    :class:`TrustFile` already read from it (start-up reads it once, for the nonce store's retention too)."""

    def __init__(
        self,
        path: Path | TrustFile,
        nonce_store: NonceStore,
        *,
        content_validator: ContentValidator | None = None,
    ) -> None:
        trust = path if isinstance(path, TrustFile) else TrustFile.read(path)
        self.path = trust.path
        self.nonce_store = nonce_store
        self.content_validator = content_validator  # layer D, kept across reloads (its models load once)
        self.version = 0
        self.config: TrustConfig = trust.config
        self.current: AgentTrustEnforcer = self._build(self.config)
        self._mtime = trust.modified

    def _build(self, config: TrustConfig) -> AgentTrustEnforcer:
        enforcer = AgentTrustEnforcer.from_config(
            config, nonce_store=self.nonce_store, content_validator=self.content_validator
        )
        self.version += 1
        return enforcer

    def reload(self) -> str | None:
        """Rebuild from the file now. Returns None on success, else the error (the old enforcer stays)."""
        mtime = _modified(self.path)
        try:
            config = trust_config_from_path(self.path)
            kept = getattr(self.nonce_store, "retention_s", None)
            wanted = config.attestation.nonce_retention_s
            if kept is not None and wanted > kept:
                raise ConfigError(
                    f"the new nonce retention ({wanted:g} s: freshness window + 2 x clock skew) is longer than "
                    f"the nonce store keeps nonces ({kept:g} s): replays would pass; restart the broker to widen it"
                )
            enforcer = self._build(config)
        except ConfigError as exc:
            log.error("trust configuration reload failed; keeping the previous one: %s", exc)
            self._mtime = mtime
            return str(exc)
        self.config, self.current, self._mtime = config, enforcer, mtime
        log.info("trust configuration reloaded: %d agents (version %d)", len(enforcer.registry), self.version)
        return None

    def reload_if_changed(self) -> bool:
        """Reload when the file's modification time changed; True when a reload was attempted."""
        mtime = _modified(self.path)
        if mtime is None or mtime == self._mtime:
            return False
        self.reload()
        return True

    async def watch(self, interval_s: float) -> None:
        """Poll the file's mtime forever (cancel the task to stop)."""
        while True:
            await asyncio.sleep(interval_s)
            self.reload_if_changed()
