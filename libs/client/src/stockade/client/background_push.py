"""Push refresh for the sync client: the NATS subscription runs on an event loop in a daemon thread."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

from stockade.client.core import ClientCore
from stockade.client.push import PromptPushSubscription


class BackgroundPush:
    """Owns a thread with an asyncio loop; ``on_stale`` runs in the loop's executor (it may block)."""

    def __init__(
        self,
        core: ClientCore,
        on_stale: Callable[[str, str], None],
        on_policy: Callable[[str, str], None] | None = None,
    ) -> None:
        self._on_stale = on_stale
        self._on_policy = on_policy
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="stockade-client-push", daemon=True
        )
        self._subscription = PromptPushSubscription(core, self._stale, self._policy)

    def _stale(self, project_id: str, prompt_name: str) -> None:
        self._loop.run_in_executor(None, self._on_stale, project_id, prompt_name)

    def _policy(self, project_id: str, policy_name: str) -> None:
        if self._on_policy is not None:
            self._loop.run_in_executor(None, self._on_policy, project_id, policy_name)

    def follow_policies(self, project_id: str, policy_name: str, timeout_s: float) -> None:
        """Subscribe to the project's policy events on the push loop (raises if the server refuses)."""
        following = self._subscription.follow_policies(project_id, policy_name)
        future = asyncio.run_coroutine_threadsafe(following, self._loop)
        future.result(timeout_s + 1)

    def start(self, timeout_s: float) -> None:
        self._thread.start()
        try:
            asyncio.run_coroutine_threadsafe(self._subscription.start(), self._loop).result(timeout_s + 1)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        if not self._thread.is_alive():
            return
        try:
            asyncio.run_coroutine_threadsafe(self._subscription.stop(), self._loop).result(10)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
            self._loop.close()
