"""StockadeClient: the blocking client of prompt-api (same methods as AsyncStockadeClient)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any, TypeVar

import httpx

from stockade.client import calls, policy_calls
from stockade.client.background_push import BackgroundPush
from stockade.client.cache import policy_key
from stockade.client.calls import Call, Page
from stockade.client.core import ClientCore, not_found_version
from stockade.client.errors import ServerUnavailableError, StockadeClientError
from stockade.client.models import (
    PolicyDecision,
    PolicyProposal,
    PolicySummary,
    PolicyVersion,
    PromptSummary,
    PromptVersion,
    SkillDetail,
    SkillSummary,
    SkillVersion,
)
from stockade.client.policy_watch import PolicyListener, PolicyWatchers
from stockade.client.redaction import install_httpx_log_redaction
from stockade.client.reviews import SyncReviews
from stockade.client.settings import ClientSettings

T = TypeVar("T")
log = logging.getLogger("stockade.client")


class StockadeClient(SyncReviews):
    """Prompts and skills from prompt-api, with an ETag cache, optional push refresh and a last good copy.

    The key goes in the X-API-Key header on every call but the prompt read, where the spec (4.1) takes it as
    the ``api_key`` query parameter; it is never logged and never in ``repr``.
    """

    def __init__(
        self,
        api_key: str,
        settings: ClientSettings | None = None,
        *,
        http_client: httpx.Client | None = None,
    ) -> None:
        install_httpx_log_redaction()
        if not api_key:
            raise ValueError("an API key is required")
        settings = settings or ClientSettings()
        self._owns_http = http_client is None
        self._http = http_client or httpx.Client(base_url=settings.base_url, timeout=settings.timeout_s)
        self._core = ClientCore(api_key, settings, str(self._http.base_url))
        self._push: BackgroundPush | None = None
        # the latest push-triggered refresh of each prompt: a read meanwhile waits for it instead of asking twice
        self._refreshing: dict[tuple[str, str], threading.Event] = {}
        self._refreshing_lock = threading.Lock()
        self._policy_watchers = PolicyWatchers()
        self._poller: threading.Thread | None = None  # re-reads the watched policies push does not bring
        self._closing = threading.Event()

    @property
    def settings(self) -> ClientSettings:
        return self._core.settings

    def __repr__(self) -> str:
        return f"StockadeClient(base_url={self._core.base_url!r})"

    def __enter__(self) -> StockadeClient:
        if self._core.settings.push.nats_url is not None:
            try:
                self.start_push()
            except ServerUnavailableError as exc:
                log.warning("%s: push refresh is off, every read revalidates with the server", exc)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def start_push(self) -> None:
        """Subscribe to prompt.published.v1 (needs the ``push`` extra and ``settings.push.nats_url``)."""
        if self._push is None:
            push = BackgroundPush(self._core, self._refresh, self._refresh_policy)
            push.start(self._core.settings.push.connect_timeout_s)
            self._push = push

    def close(self) -> None:
        self._closing.set()
        if self._poller is not None:  # a poll under way ends within one request's timeout and retries
            self._poller.join(self._core.settings.timeout_s * self._core.settings.retry.attempts + 5)
        if self._push is not None:
            self._push.stop()
            self._push = None
        if self._owns_http:
            self._http.close()

    def _refresh(self, project_id: str, prompt_name: str) -> None:
        key, done = (project_id, prompt_name), threading.Event()
        with self._refreshing_lock:
            self._refreshing[key] = done
        try:
            self._run(calls.get_active_prompt(project_id, prompt_name))
        except StockadeClientError as exc:
            log.warning("refresh of prompt %r of project %r failed: %s", prompt_name, project_id, exc)
        finally:
            done.set()
            with self._refreshing_lock:
                if self._refreshing.get(key) is done:
                    del self._refreshing[key]

    def _run(self, call: Call[T]) -> T:
        core = self._core
        entry, stamp = core.cached_entry(call), core.cache.stamp()  # an invalidation after the stamp wins
        if core.trusted(call, entry):
            assert entry is not None
            value: T = entry.value
            return value
        attempts = core.attempts(call)
        outcome: httpx.Response | Exception
        for attempt in range(1, attempts + 1):
            try:
                outcome = self._http.send(core.build(self._http, call, entry))
            except httpx.TransportError as exc:
                outcome = exc
            if attempt == attempts or not core.retryable(call, outcome):
                break
            time.sleep(core.backoff(attempt))
        return core.finish(call, entry, outcome, stamp)

    def _all_pages(self, make: Callable[[str | None], Call[Page[list[T]]]]) -> list[T]:
        """Every item of a paged listing: follows ``X-Next-Cursor`` until the last page."""
        items: list[T] = []
        seen: set[str] = set()
        cursor: str | None = None
        while True:
            page = self._run(make(cursor))
            items.extend(page.value)
            if page.next_cursor is None:
                return items
            calls.check_cursor(seen, page.next_cursor)
            cursor = page.next_cursor

    def get_prompt(self, project_id: str, prompt_name: str, version: int | None = None) -> PromptVersion:
        """The active version (the uniform read endpoint), or an earlier ``version`` from the history."""
        if version is None:
            with self._refreshing_lock:
                refreshing = self._refreshing.get((project_id, prompt_name))
            if refreshing is not None:  # pushed: the refresh under way brings the new version (bounded wait)
                refreshing.wait(self._core.settings.timeout_s)
            return self._run(calls.get_active_prompt(project_id, prompt_name))
        for found in self.prompt_versions(project_id, prompt_name):
            if found.version == version:
                return found
        raise not_found_version(f"prompt {prompt_name!r} of project {project_id!r}", version)

    def prompt_versions(self, project_id: str, prompt_name: str) -> list[PromptVersion]:
        """Every version of a prompt, newest first (every page)."""
        return self._all_pages(lambda cursor: calls.prompt_history(project_id, prompt_name, cursor))

    def list_prompts(self, project_id: str) -> list[PromptSummary]:
        """Every prompt of the project with its active version, by name (follows the pages)."""
        return self._all_pages(lambda cursor: calls.list_prompts(project_id, cursor))

    def publish_prompt(
        self,
        project_id: str,
        prompt_name: str,
        content: str | list[dict[str, str]],
        config: Mapping[str, Any] | None = None,
        commit_message: str | None = None,
    ) -> PromptVersion:
        return self._run(calls.publish_prompt(project_id, prompt_name, content, config, commit_message))

    def rollback(
        self, project_id: str, prompt_name: str, version: int, commit_message: str | None = None
    ) -> PromptVersion:
        """Publish an earlier version's content as the new active version."""
        return self._run(calls.rollback(project_id, prompt_name, version, commit_message))

    def list_skills(self, project_id: str) -> list[SkillSummary]:
        """Every skill of the project, by name (follows the pages)."""
        return self._all_pages(lambda cursor: calls.list_skills(project_id, cursor))

    def get_skill(self, project_id: str, name: str, version: int | None = None) -> SkillDetail:
        """The skill version with its whole ``history`` (follows the history's pages)."""
        page = self._run(calls.get_skill(project_id, name, version))
        detail, history, seen = page.value, list(page.value.history), set[str]()
        while page.next_cursor is not None:
            calls.check_cursor(seen, page.next_cursor)
            page = self._run(calls.get_skill(project_id, name, version, page.next_cursor))
            history.extend(page.value.history)
        return detail.model_copy(update={"history": history})

    def get_skill_file(self, project_id: str, name: str, path: str, version: int | None = None) -> bytes:
        return self._run(calls.get_skill_file(project_id, name, path, version))

    def publish_skill(
        self,
        project_id: str,
        skill_name: str,
        skill_md: str,
        files: Mapping[str, str | bytes] | None = None,
        commit_message: str | None = None,
    ) -> SkillVersion:
        """``files``: relative path -> text, or bytes (sent as base64)."""
        return self._run(calls.publish_skill(project_id, skill_name, skill_md, files, commit_message))

    # --- guardrail policies (issue 31) -------------------------------------------------------------------------
    def get_policy(self, project_id: str, policy_name: str, version: int | None = None) -> PolicyVersion:
        """The active version (cached, ETag), or an earlier ``version`` from the history."""
        if version is None:
            return self._run(policy_calls.get_active_policy(project_id, policy_name))
        for found in self.policy_versions(project_id, policy_name):
            if found.version == version:
                return found
        raise not_found_version(f"policy {policy_name!r} of project {project_id!r}", version)

    def policy_versions(self, project_id: str, policy_name: str) -> list[PolicyVersion]:
        """Every version of a policy, newest first (every page)."""
        return self._all_pages(lambda cursor: policy_calls.policy_history(project_id, policy_name, cursor))

    def list_policies(self, project_id: str) -> list[PolicySummary]:
        """Every policy of the project with its active version, by name (follows the pages)."""
        return self._all_pages(lambda cursor: policy_calls.list_policies(project_id, cursor))

    def publish_policy(
        self, project_id: str, policy_name: str, yaml: str, commit_message: str | None = None
    ) -> PolicyVersion:
        return self._run(policy_calls.publish_policy(project_id, policy_name, yaml, commit_message))

    def rollback_policy(
        self, project_id: str, policy_name: str, version: int, commit_message: str | None = None
    ) -> PolicyVersion:
        """Publish an earlier version's YAML as the new active version."""
        return self._run(policy_calls.rollback_policy(project_id, policy_name, version, commit_message))

    def list_policy_proposals(self, project_id: str, status: str = "pending") -> list[PolicyProposal]:
        """The project's policy proposals with ``status`` (pending, approved or rejected), at most 200."""
        return self._run(policy_calls.list_policy_proposals(project_id, status))

    def propose_policy(
        self, project_id: str, policy_name: str, yaml: str, commit_message: str | None = None
    ) -> PolicyProposal:
        """Propose a version on a Manual review project: an approver publishes it (or rejects it)."""
        return self._run(policy_calls.propose_policy(project_id, policy_name, yaml, commit_message))

    def decide_policy_proposal(
        self, project_id: str, proposal_id: str, verdict: str, comment: str | None = None
    ) -> PolicyDecision:
        """``verdict``: approve (publishes it; needs the approver tag) or reject (``comment`` required)."""
        return self._run(policy_calls.decide_policy_proposal(project_id, proposal_id, verdict, comment))

    def watch_policy(
        self,
        project_id: str,
        policy_name: str,
        listener: PolicyListener,
        current: PolicyVersion | None = None,
    ) -> bool:
        """Call ``listener`` (in the push thread) with each version of the policy that becomes active, once each;
        ``current`` is the version the caller runs on now. True when push follows the project's policy events;
        False without push (``settings.push.nats_url`` unset or NATS unreachable). Whatever push does not bring
        (no push, a refused subject, a disconnection) is re-read every ``settings.policy_poll_s`` instead."""
        self._policy_watchers.add(project_id, policy_name, listener)
        if current is not None:
            self._policy_watchers.told(current)
        interval = self._core.settings.policy_poll_s
        if interval > 0 and self._poller is None:
            self._poller = threading.Thread(target=self._poll, args=(interval,), daemon=True)
            self._poller.start()
        if self._push is None:
            return False
        self._push.follow_policies(project_id, policy_name, self._core.settings.push.connect_timeout_s)
        self._policy_watchers.pushed(project_id, policy_name)
        return True

    def _poll(self, interval: float) -> None:
        while not self._closing.wait(interval):
            for project_id, policy_name in self._policy_watchers.to_poll(self._core.push_active):
                self._core.cache.invalidate(
                    policy_key(project_id, policy_name)
                )  # revalidate: 304 if unchanged
                self._refresh_policy(project_id, policy_name)

    def _refresh_policy(self, project_id: str, policy_name: str) -> None:
        try:
            found = self._run(policy_calls.get_active_policy(project_id, policy_name))
        except StockadeClientError as exc:
            log.warning("refresh of policy %r of project %r failed: %s", policy_name, project_id, exc)
            return
        self._policy_watchers.deliver(found)
