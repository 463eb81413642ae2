"""What each client method sends and how its answer is read: shared by the sync and the async client."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx
from pydantic import TypeAdapter

from stockade.client.cache import CacheKey, prompt_key
from stockade.client.errors import StockadeClientError
from stockade.client.models import PromptSummary, PromptVersion, SkillDetail, SkillSummary, SkillVersion

T = TypeVar("T")

READ_PATH = "/prompts/active-prompt-version"


@dataclass(frozen=True)
class Call(Generic[T]):
    """One HTTP call of the client, described without doing any I/O."""

    method: str
    path: str
    parse: Callable[[httpx.Response], T]
    params: Mapping[str, str] = field(default_factory=dict)
    json: Any = None
    is_read: bool = True
    # Only the uniform read endpoint: the spec (4.1) takes the key there as the api_key query parameter.
    key_in_query: bool = False
    cache_key: CacheKey | None = None
    # prompt.published.v1 invalidates this read's cached copy, so push may let it skip revalidation
    push_invalidated: bool = False
    # a successful publish makes this cached read out of date at once (not only when its event arrives)
    invalidates: CacheKey | None = None
    what: str = ""

    @property
    def uniform_read(self) -> bool:
        return self.key_in_query


def _model(adapter: TypeAdapter[T]) -> Callable[[httpx.Response], T]:
    return lambda response: adapter.validate_json(response.content)


_PROMPT = _model(TypeAdapter(PromptVersion))
_PROMPTS = _model(TypeAdapter(list[PromptSummary]))
_HISTORY = _model(TypeAdapter(list[PromptVersion]))
_SKILLS = _model(TypeAdapter(list[SkillSummary]))
_SKILL = _model(TypeAdapter(SkillDetail))
_SKILL_VERSION = _model(TypeAdapter(SkillVersion))


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a listing and the cursor of the next (None on the last page)."""

    value: T
    next_cursor: str | None


NEXT_CURSOR_HEADER = "X-Next-Cursor"


def _paged(parse: Callable[[httpx.Response], T]) -> Callable[[httpx.Response], Page[T]]:
    return lambda response: Page(parse(response), response.headers.get(NEXT_CURSOR_HEADER))


def _page_params(params: dict[str, str], cursor: str | None) -> dict[str, str]:
    return params if cursor is None else {**params, "cursor": cursor}


def _raw(response: httpx.Response) -> bytes:
    return response.content


def _segment(value: str) -> str:
    return quote(value, safe="")


def _with_version(params: dict[str, str], version: int | None) -> dict[str, str]:
    return params if version is None else {**params, "version": str(version)}


def _project_listing(
    kind: str, parse: Callable[[httpx.Response], T], project_id: str, cursor: str | None
) -> Call[Page[T]]:
    """One page of ``GET /<kind>?project_id=...`` (the project's prompts or skills)."""
    return Call(
        "GET",
        f"/{kind}",
        _paged(parse),
        params=_page_params({"project_id": project_id}, cursor),
        cache_key=(kind, project_id, cursor or ""),
        what=f"{kind} of project {project_id!r}",
    )


def get_active_prompt(project_id: str, prompt_name: str) -> Call[PromptVersion]:
    return Call(
        "GET",
        READ_PATH,
        _PROMPT,
        params={"project_id": project_id, "prompt_name": prompt_name},
        key_in_query=True,
        cache_key=prompt_key(project_id, prompt_name),
        push_invalidated=True,
        what=f"prompt {prompt_name!r} of project {project_id!r}",
    )


def prompt_history(
    project_id: str, prompt_name: str, cursor: str | None = None
) -> Call[Page[list[PromptVersion]]]:
    return Call(
        "GET",
        f"/prompts/{_segment(prompt_name)}/versions",
        _paged(_HISTORY),
        params=_page_params({"project_id": project_id}, cursor),
        cache_key=("prompt-history", project_id, prompt_name, cursor or ""),
        what=f"versions of prompt {prompt_name!r} of project {project_id!r}",
    )


def list_prompts(project_id: str, cursor: str | None = None) -> Call[Page[list[PromptSummary]]]:
    return _project_listing("prompts", _PROMPTS, project_id, cursor)


def publish_prompt(
    project_id: str,
    prompt_name: str,
    content: Any,
    config: Mapping[str, Any] | None,
    commit_message: str | None,
) -> Call[PromptVersion]:
    body: dict[str, Any] = {"project_id": project_id, "prompt_name": prompt_name, "content": content}
    if config is not None:
        body["config"] = dict(config)
    if commit_message is not None:
        body["commit_message"] = commit_message
    return Call(
        "POST", READ_PATH, _PROMPT, json=body, is_read=False, invalidates=prompt_key(project_id, prompt_name)
    )


def rollback(
    project_id: str, prompt_name: str, version: int, commit_message: str | None
) -> Call[PromptVersion]:
    body: dict[str, Any] = {"project_id": project_id, "version": version}
    if commit_message is not None:
        body["commit_message"] = commit_message
    return Call(
        "POST",
        f"/prompts/{_segment(prompt_name)}/rollback",
        _PROMPT,
        json=body,
        is_read=False,
        invalidates=prompt_key(project_id, prompt_name),
    )


def list_skills(project_id: str, cursor: str | None = None) -> Call[Page[list[SkillSummary]]]:
    return _project_listing("skills", _SKILLS, project_id, cursor)


def get_skill(
    project_id: str, name: str, version: int | None, cursor: str | None = None
) -> Call[Page[SkillDetail]]:
    """The skill version and one page of its ``history`` (the cursor pages the history)."""
    return Call(
        "GET",
        f"/skills/{_segment(name)}",
        _paged(_SKILL),
        params=_page_params(_with_version({"project_id": project_id}, version), cursor),
        cache_key=("skill", project_id, name, str(version or ""), cursor or ""),
        what=f"skill {name!r} of project {project_id!r}",
    )


def check_cursor(seen: set[str], cursor: str) -> None:
    """A cursor the server already gave would make the listing loop forever: refuse it."""
    if cursor in seen:
        raise StockadeClientError(
            f"the server repeated a page cursor ({cursor!r}); the listing would never end"
        )
    seen.add(cursor)


def get_skill_file(project_id: str, name: str, path: str, version: int | None) -> Call[bytes]:
    # each segment is quoted on its own, so the server sees the path exactly (and refuses traversal itself)
    quoted = "/".join(_segment(part) for part in path.split("/"))
    return Call(
        "GET",
        f"/skills/{_segment(name)}/{quoted}",
        _raw,
        params=_with_version({"project_id": project_id}, version),
        cache_key=("skill-file", project_id, name, path, str(version or "")),
        what=f"file {path!r} of skill {name!r} of project {project_id!r}",
    )


def publish_skill(
    project_id: str,
    skill_name: str,
    skill_md: str,
    files: Mapping[str, str | bytes] | None,
    commit_message: str | None,
) -> Call[SkillVersion]:
    import base64

    encoded: dict[str, Any] = {}
    for path, data in (files or {}).items():
        encoded[path] = {"base64": base64.b64encode(data).decode()} if isinstance(data, bytes) else data
    body: dict[str, Any] = {"project_id": project_id, "skill_name": skill_name, "skill_md": skill_md}
    if encoded:
        body["files"] = encoded
    if commit_message is not None:
        body["commit_message"] = commit_message
    return Call("POST", "/skills/active-version", _SKILL_VERSION, json=body, is_read=False)
