"""A guardrail policy published on the platform (prompt-api's ``/policies``, issue 31) as a system's configuration:
``GuardrailSystem.from_platform(project_id, policy_name, ...)`` and ``LLMRails.from_platform(...)``.

- At start the active version is read through ``stockade.client`` (ETag cache) and built. Each version that builds
  is kept on disk as the last good copy (``<cache_dir>/<project>/<policy>.json``, written atomically).
- With prompt-api unreachable at start the system runs on that disk copy and logs a WARNING saying so (no copy:
  :class:`~stockade.guardrails.errors.GuardrailError`). A version that does not build (a missing extra, say) is
  skipped for the disk copy the same way, with an ERROR.
- Activations are followed by push (the client's push refresh on ``policy.published.v1.<project>``): the new
  version is built on the client's push thread and swapped in between checks (:meth:`GuardrailSystem.adopt`); one
  that fails to build leaves the system on the last good version with an ERROR. What push does not bring (no
  ``push.nats_url``, NATS unreachable or disconnected, the subject not granted) the client re-reads every
  ``settings.policy_poll_s`` (ETag; default 30 s), and a WARNING says so. A replaced version's checks are
  closed once the checks running on them end (:mod:`stockade.guardrails.live`).
- ``system.policy_ref`` names the version in use; every stored guardrail event carries it.
"""

from __future__ import annotations

import logging
import os
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from stockade.client import ClientSettings, PolicyVersion, PushSettings, StockadeClient
from stockade.client.errors import ServerUnavailableError
from stockade.contracts.policy import PolicyRef
from stockade.guardrails.config import GuardrailsConfig
from stockade.guardrails.errors import GuardrailError
from stockade.guardrails.events import EventRecorder

log = logging.getLogger("stockade.guardrails.platform")


class Adopting(Protocol):
    """What following a policy needs of a system (``GuardrailSystem``): its version, and a swap."""

    policy_ref: PolicyRef | None

    def adopt(self, config: GuardrailsConfig, policy_ref: PolicyRef | None) -> None: ...


S = TypeVar("S", bound=Adopting)

API_KEY_ENV = "STOCKADE_API_KEY"
CACHE_DIR_ENV = "STOCKADE_POLICY_CACHE_DIR"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def default_cache_dir() -> Path:
    return Path(os.environ.get(CACHE_DIR_ENV) or Path.home() / ".cache" / "stockade" / "policies")


@dataclass(frozen=True)
class DiskCopy:
    """The last version of a policy that built, as kept on disk."""

    path: Path

    def load(self) -> PolicyVersion | None:
        try:
            return PolicyVersion.model_validate_json(self.path.read_bytes())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            log.error("the disk copy %s of the policy is unreadable (%s); ignored", self.path, exc)
            return None

    def save(self, version: PolicyVersion) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".policy-", suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(version.model_dump_json())
            os.replace(tmp, self.path)  # atomic: a reader sees the old copy or the new one, never half
        except OSError as exc:
            log.error("cannot keep the policy's disk copy at %s: %s", self.path, exc)


def config_of(version: PolicyVersion) -> GuardrailsConfig:
    return GuardrailsConfig.from_yaml(version.yaml)


def ref_of(version: PolicyVersion) -> PolicyRef:
    return PolicyRef(name=version.policy_name, version=version.version)


def _label(version: PolicyVersion) -> str:
    return f"policy {version.policy_name!r} version {version.version} of project {version.project_id!r}"


def from_platform(
    cls: Callable[..., S],
    project_id: str,
    policy_name: str,
    *,
    api_key: str | None = None,
    settings: ClientSettings | None = None,
    client: StockadeClient | None = None,
    cache_dir: str | Path | None = None,
    recorder: EventRecorder | None = None,
    **overrides: Any,
) -> S:
    """A ``cls`` (GuardrailSystem) on the policy's active version, following its activations.

    ``client``: a :class:`StockadeClient` to use (its push settings decide whether activations are followed);
    otherwise one is made from ``api_key`` (default: the ``STOCKADE_API_KEY`` variable) and ``settings`` (its push
    follows ``project_id`` only) and lives as long as the process. ``cache_dir``: where the last good copy is
    kept (default ``$STOCKADE_POLICY_CACHE_DIR`` or ``~/.cache/stockade/policies``). ``recorder`` and
    ``overrides`` as for ``GuardrailSystem(...)``; overrides apply on top of every version.
    """
    for value in (project_id, policy_name):
        if not _NAME.fullmatch(value):
            raise GuardrailError(f"{value!r} is not a project id or policy name")
    disk = DiskCopy(Path(cache_dir or default_cache_dir()) / project_id / f"{policy_name}.json")
    owned = client is None
    client = client or _own_client(api_key, settings, project_id)
    try:
        version = client.get_policy(project_id, policy_name)
    except ServerUnavailableError as exc:
        kept = disk.load()
        if kept is None:
            raise GuardrailError(
                f"prompt-api is unreachable ({exc}) and there is no disk copy of policy {policy_name!r} at "
                f"{disk.path}: nothing to run on"
            ) from None
        log.warning("prompt-api is unreachable (%s): running on the disk copy of %s", exc, _label(kept))
        version = kept
    system = _build_first(cls, version, disk, recorder, overrides)
    follower = _Follower(system, disk)
    try:
        following = client.watch_policy(project_id, policy_name, follower.activate, current=version)
    except ServerUnavailableError as exc:
        log.warning("%s", exc)
        following = False
    if not following:
        every = client.settings.policy_poll_s  # the client re-reads what push does not bring
        log.warning(
            "push refresh is off for policy %r (no push.nats_url, NATS unreachable, or the subject not "
            "granted): %s",
            policy_name,
            f"following it by polling prompt-api every {every:g} s"
            if every
            else "a new version applies at the next start (settings.policy_poll_s is 0)",
        )
    if owned:  # kept alive with the system; aclose() closes it (its push thread)
        system._platform_client = client  # type: ignore[attr-defined]
    return system


def _own_client(api_key: str | None, settings: ClientSettings | None, project_id: str) -> StockadeClient:
    key = api_key or os.environ.get(API_KEY_ENV)
    if not key:
        raise GuardrailError(f"from_platform needs an API key: api_key=... or the {API_KEY_ENV} variable")
    settings = settings or ClientSettings()
    if settings.push.nats_url is not None and not settings.push.project_ids:
        push = PushSettings.model_validate({**settings.push.model_dump(), "project_ids": (project_id,)})
        settings = settings.model_copy(update={"push": push})
    client = StockadeClient(key, settings)
    return client.__enter__()  # starts push when configured (a WARNING and no push when NATS is down)


def _build_first(
    cls: Callable[..., S],
    version: PolicyVersion,
    disk: DiskCopy,
    recorder: EventRecorder | None,
    overrides: dict[str, Any],
) -> S:
    """The system on ``version``; if it does not build, on the disk copy (an ERROR says why)."""
    try:
        system = cls(config_of(version), recorder=recorder, **overrides)
    except Exception as exc:
        fallback = disk.load()
        if fallback is None or fallback.sha256 == version.sha256:
            raise
        log.error(
            "%s does not build (%s): running on the disk copy, %s", _label(version), exc, _label(fallback)
        )
        version, system = fallback, cls(config_of(fallback), recorder=recorder, **overrides)
    else:
        disk.save(version)
    system.policy_ref = ref_of(version)
    log.info("guardrails on %s", _label(version))
    return system


class _Follower:
    """Swaps a system to each version push brings; keeps the last good one when a version does not build."""

    def __init__(self, system: Adopting, disk: DiskCopy) -> None:
        self._system = system
        self._disk = disk

    def activate(self, version: PolicyVersion) -> None:
        current = self._system.policy_ref
        try:
            self._system.adopt(config_of(version), ref_of(version))
        except Exception as exc:
            on = f"version {current.version}" if current else "its configuration"
            log.error("%s does not build (%s): staying on %s", _label(version), exc, on)
            return
        self._disk.save(version)
        log.info("guardrails now on %s", _label(version))
