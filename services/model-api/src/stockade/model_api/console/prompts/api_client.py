"""The console's calls to prompt-api: its public HTTP API with the signed-in user's own key (``X-API-Key``).

prompt-api is the only place its rules are decided; the console passes its answers on. Statuses 401, 403, 404
and 422 become :class:`PromptApiRefused` (shown on the page with prompt-api's own message); an unreachable
service or a 5xx becomes :class:`PromptApiUnavailable` (503). Histories are followed through ``X-Next-Cursor``
up to a bound.
"""

from __future__ import annotations

from typing import Any

import httpx

MAX_PAGES = 20  # 20 pages of 200 versions: more history than a page can show


class PromptApiError(Exception):
    """Base of the console's prompt-api call errors."""


class PromptApiRefused(PromptApiError):
    """prompt-api answered no (401, 403, 404, 422): its status and message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class PromptApiUnavailable(PromptApiError):
    """prompt-api did not answer, or failed (503 on the console)."""


def _message(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:300] or response.reason_phrase
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        details = error.get("details")
        problems = details.get("problems") if isinstance(details, dict) else None
        text = str(error.get("message", ""))
        if isinstance(problems, list) and problems:
            text += ": " + "; ".join(str(p.get("problem", p)) for p in problems if isinstance(p, dict))
        return text
    return response.text[:300]


class PromptApiClient:
    """prompt-api as one user: every call carries that user's key in the ``X-API-Key`` header."""

    def __init__(self, http: httpx.AsyncClient, api_key: str) -> None:
        self._http = http
        self._headers = {"X-API-Key": api_key}

    async def _call(self, method: str, path: str, **kw: Any) -> httpx.Response:
        try:
            response = await self._http.request(method, path, headers=self._headers, **kw)
        except httpx.HTTPError as exc:
            raise PromptApiUnavailable(f"prompt-api cannot be reached: {type(exc).__name__}") from None
        if response.status_code >= 500:
            raise PromptApiUnavailable(f"prompt-api failed ({response.status_code})")
        if response.status_code >= 400:
            raise PromptApiRefused(response.status_code, _message(response))
        return response

    async def _json(self, method: str, path: str, **kw: Any) -> Any:
        return (await self._call(method, path, **kw)).json()

    async def _all(self, path: str, params: dict[str, Any]) -> list[Any]:
        items: list[Any] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            page = await self._call(
                "GET", path, params={**params, "limit": 200, **({"cursor": cursor} if cursor else {})}
            )
            items.extend(page.json())
            cursor = page.headers.get("X-Next-Cursor")
            if not cursor:
                break
        return items

    async def prompts(self, project_id: str) -> list[dict[str, Any]]:
        return await self._all("/prompts", {"project_id": project_id})

    async def versions(self, project_id: str, name: str) -> list[dict[str, Any]]:
        return await self._all(f"/prompts/{_seg(name)}/versions", {"project_id": project_id})

    async def rollback(self, project_id: str, name: str, version: int, message: str | None) -> dict[str, Any]:
        body = {"project_id": project_id, "version": version, "commit_message": message}
        result: dict[str, Any] = await self._json("POST", f"/prompts/{_seg(name)}/rollback", json=body)
        return result

    async def skills(self, project_id: str) -> list[dict[str, Any]]:
        return await self._all("/skills", {"project_id": project_id})

    async def skill(self, project_id: str, name: str) -> dict[str, Any]:
        result: dict[str, Any] = await self._json(
            "GET", f"/skills/{_seg(name)}", params={"project_id": project_id, "limit": 200}
        )
        return result

    async def skill_md(self, project_id: str, name: str, version: int) -> str:
        response = await self._call(
            "GET", f"/skills/{_seg(name)}/SKILL.md", params={"project_id": project_id, "version": version}
        )
        return response.content.decode("utf-8", errors="replace")

    async def proposals(
        self, project_id: str, status: str = "pending", kind: str = "prompt"
    ) -> list[dict[str, Any]]:
        """The project's prompt (``kind="prompt"``) or skill (``kind="skill"``) proposals with ``status``."""
        result: list[dict[str, Any]] = await self._json(
            "GET",
            f"/{_kind(kind)}-reviews",
            params={"project_id": project_id, "status": status, "limit": 200},
        )
        return result

    async def decide(
        self, project_id: str, proposal_id: str, verdict: str, comment: str | None, kind: str = "prompt"
    ) -> dict[str, Any]:
        body = {"project_id": project_id, "comment": comment}
        result: dict[str, Any] = await self._json(
            "POST", f"/{_kind(kind)}-reviews/{_seg(proposal_id)}/{verdict}", json=body
        )
        return result


def _kind(kind: str) -> str:
    if kind not in ("prompt", "skill"):
        raise ValueError(f"no {kind!r} reviews: prompt or skill")
    return kind


def _seg(value: str) -> str:
    """One path segment: nothing the caller typed can add segments or a query."""
    from urllib.parse import quote

    return quote(value, safe="")
