"""Push refresh: a NATS subscription to prompt.published.v1.<project> that invalidates cached prompts at once, and
(once a policy is followed, :meth:`PromptPushSubscription.follow_policies`) to policy.published.v1.<project>.

prompt-api publishes each event on its project's subject (``subjects.prompt_published``), and deploy/nats grants
an agent only the projects it works for: list them in ``PushSettings.project_ids``. A subscription the server
refuses fails ``start()`` (a push that never arrives must not let stale copies be trusted).

nats-py comes with the ``push`` extra and is imported only when push is started.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError as PydanticValidationError

from stockade.client.cache import policy_key, prompt_key
from stockade.client.core import ClientCore
from stockade.client.errors import ServerUnavailableError
from stockade.contracts.envelope import PolicyPublished, PromptPublished
from stockade.contracts.nats_sync import sync_with_server
from stockade.contracts.subjects import (
    POLICY_PUBLISHED,
    POLICY_PUBLISHED_WILDCARD,
    PROMPT_PUBLISHED,
    PROMPT_PUBLISHED_WILDCARD,
    policy_published,
    prompt_published,
)

log = logging.getLogger("stockade.client")

MISSING_EXTRA = (
    "push refresh needs nats-py, which comes with the 'push' extra: pip install 'stockade-client[push]'"
)


def import_nats() -> Any:
    try:
        import nats
    except ImportError as exc:
        raise ImportError(MISSING_EXTRA) from exc
    return nats


class PromptPushSubscription:
    """Subscribes to prompt.published.v1; for a cached prompt it invalidates the copy and calls ``on_stale``.
    For a followed project's policy events it invalidates the cached policy and calls ``on_policy``."""

    def __init__(
        self,
        core: ClientCore,
        on_stale: Callable[[str, str], None],
        on_policy: Callable[[str, str], None] | None = None,
    ) -> None:
        self._core = core
        self._on_stale = on_stale
        self._on_policy = on_policy
        self._nc: Any = None
        self._errors: list[str] = []
        self._policy_subjects: set[str] = set()
        self._followed: set[tuple[str, str]] = set()

    async def start(self) -> None:
        url = self._core.settings.push.nats_url
        if url is None:
            raise ValueError("push.nats_url is not set")
        nats = import_nats()
        timeout = self._core.settings.push.connect_timeout_s
        nc = nats.NATS()
        try:
            # reconnect forever once connected, but bound the first connection (nats-py would retry forever)
            await asyncio.wait_for(
                nc.connect(
                    url,
                    connect_timeout=timeout,
                    disconnected_cb=self._disconnected,
                    reconnected_cb=self._reconnected,
                    error_cb=self._error,
                    allow_reconnect=True,
                    max_reconnect_attempts=-1,
                ),
                timeout=timeout,
            )
            projects = self._core.settings.push.project_ids
            wanted = [prompt_published(p) for p in projects] or [PROMPT_PUBLISHED_WILDCARD]
            for subject in wanted:
                await nc.subscribe(subject, cb=self._on_message)
            await sync_with_server(nc, timeout)  # a refusal's -ERR arrives before this PONG
            refused = [
                s for s in wanted if any(f'"{s.lower()}"' in e and "violation" in e for e in self._errors)
            ]
            if refused:
                raise PermissionError(f"the NATS user may not subscribe to {', '.join(refused)}")
        except PermissionError as exc:
            await nc.close()
            raise ServerUnavailableError(
                f"push refresh: {exc} (push.project_ids, deploy/nats/agents.conf)"
            ) from exc
        except (OSError, TimeoutError, nats.errors.Error) as exc:
            await nc.close()
            # the URL is not quoted: it may hold NATS credentials
            raise ServerUnavailableError(f"push refresh: NATS unreachable ({type(exc).__name__})") from exc
        self._nc = nc
        self._core.push_active = True

    async def follow_policies(self, project_id: str, policy_name: str) -> None:
        """Subscribe to ``policy.published.v1.<project_id>`` (once per project); a refused subscription raises
        :class:`ServerUnavailableError` (deploy/nats grants it per project, like the prompt events). After a
        reconnect every followed policy is re-read (``on_policy``): events sent meanwhile were missed."""
        subject = policy_published(project_id) if project_id else POLICY_PUBLISHED_WILDCARD
        if self._nc is None:
            return
        self._followed.add((project_id, policy_name))
        if subject in self._policy_subjects:
            return
        self._errors.clear()
        sub = await self._nc.subscribe(subject, cb=self._on_policy_message)
        await sync_with_server(self._nc, self._core.settings.push.connect_timeout_s)
        if any(f'"{subject.lower()}"' in e and "violation" in e for e in self._errors):
            await sub.unsubscribe()
            raise ServerUnavailableError(
                f"push refresh: the NATS user may not subscribe to {subject} (deploy/nats/agents.conf)"
            )
        self._policy_subjects.add(subject)

    async def _on_policy_message(self, msg: Any) -> None:
        try:
            event = PolicyPublished.model_validate_json(msg.data)
        except PydanticValidationError:
            log.warning("ignored a malformed %s event", POLICY_PUBLISHED)
            return
        self._core.cache.invalidate(policy_key(event.project_id, event.policy_name))
        log.info(
            "policy %r of project %r: version %d is active",
            event.policy_name,
            event.project_id,
            event.version,
        )
        if self._on_policy is not None:
            self._on_policy(event.project_id, event.policy_name)

    async def stop(self) -> None:
        self._core.push_active = False
        if self._nc is not None:
            nc, self._nc = self._nc, None
            await nc.drain()

    async def _error(self, exc: Exception) -> None:
        self._errors.append(str(exc).lower())
        log.debug("push refresh: NATS error %s: %s", type(exc).__name__, exc)

    async def _disconnected(self) -> None:
        # events may be missed while disconnected: stop trusting cached copies
        self._core.push_active = False
        self._core.cache.invalidate_all()

    async def _reconnected(self) -> None:
        self._core.cache.invalidate_all()
        self._core.push_active = True
        if self._on_policy is not None:
            for project_id, policy_name in sorted(self._followed):
                self._on_policy(project_id, policy_name)

    async def _on_message(self, msg: Any) -> None:
        try:
            event = PromptPublished.model_validate_json(msg.data)
        except PydanticValidationError:
            log.warning("ignored a malformed %s event", PROMPT_PUBLISHED)
            return
        if self._core.cache.invalidate(prompt_key(event.project_id, event.prompt_name)):
            log.info(
                "prompt %r of project %r published as version %d: refreshing the cached copy",
                event.prompt_name,
                event.project_id,
                event.version,
            )
            self._on_stale(event.project_id, event.prompt_name)
