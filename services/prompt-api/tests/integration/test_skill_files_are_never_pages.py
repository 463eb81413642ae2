"""A published skill file is never rendered as a page: an HTML or SVG file with script, opened in a browser with
the key in the URL, is downloaded (``Content-Disposition: attachment``), and it is sandboxed with no sources
(``Content-Security-Policy: sandbox; default-src 'none'``), never sniffed, and every response carries the
service's security headers (stockade.runtime.security_headers)."""

import asyncio
import contextlib

import httpx
import pytest
import uvicorn

from stockade.prompt_api.main import create_app
from stockade.testing.ports import free_port

SCRIPT = "<script>document.title = 'ran'; fetch('/steal?' + location.search)</script>"
FILES = {
    "assets/page.html": f"<!doctype html><html><body>{SCRIPT}</body></html>",
    "assets/logo.svg": f'<svg xmlns="http://www.w3.org/2000/svg">{SCRIPT}</svg>',
    "references/notes.md": "# Notes\n",
}
SKILL_MD = "---\nname: trojan\ndescription: Looks helpful.\n---\n# Trojan\n"


async def _publish(client, world):
    body = {"project_id": world.direct.id, "skill_name": "trojan", "skill_md": SKILL_MD, "files": FILES}
    r = await client.post("/skills/active-version", headers={"X-API-Key": world.write_key}, json=body)
    assert r.status_code == 201, r.text


async def test_skill_files_are_attachments_in_a_sandbox(client, world):
    await _publish(client, world)
    params = {"project_id": world.direct.id, "api_key": world.read_key}
    for path, name in (*((p, p.rsplit("/", 1)[-1]) for p in FILES), ("SKILL.md", "SKILL.md")):
        r = await client.get(f"/skills/trojan/{path}", params=params)
        assert r.status_code == 200, path
        assert r.headers["content-disposition"] == f'attachment; filename="{name}"', path
        assert r.headers["content-security-policy"] == "sandbox; default-src 'none'", path
        assert r.headers["x-content-type-options"] == "nosniff", path
    assert (await client.get("/skills/trojan/assets/page.html", params=params)).content == FILES[
        "assets/page.html"
    ].encode()  # the bytes are served unchanged, for agents


async def test_every_response_carries_the_security_headers(client, world):
    for path, params in (
        ("/healthz", {}),
        ("/prompts/active-prompt-version", {"api_key": "x"}),  # the uniform 404
        ("/prompts", {"project_id": world.direct.id, "api_key": world.read_key}),
        ("/skills", {}),  # 401
    ):
        r = await client.get(path, params=params)
        assert r.headers["x-content-type-options"] == "nosniff", path
        assert "default-src 'none'" in r.headers["content-security-policy"], path
        assert "sandbox" in r.headers["content-security-policy"], path
        assert r.headers["x-frame-options"] == "DENY" and r.headers["referrer-policy"] == "no-referrer", path


@pytest.mark.browser
@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
async def test_a_browser_downloads_a_script_file_instead_of_running_it(
    app_factory, world, db_url, settings_for, browser_page
):
    from playwright.async_api import Error as PlaywrightError

    client = await app_factory()
    await _publish(client, world)
    port = free_port()
    settings = settings_for(db_url)
    settings.http.port = port
    server = uvicorn.Server(uvicorn.Config(create_app(settings), port=port, log_config=None))
    task = asyncio.create_task(server.serve())
    try:
        for _ in range(400):
            if server.started or task.done():
                break
            await asyncio.sleep(0.025)
        assert server.started, "prompt-api did not start"
        base = f"http://127.0.0.1:{port}"
        for path in ("assets/page.html", "assets/logo.svg"):
            url = f"{base}/skills/trojan/{path}?project_id={world.direct.id}&api_key={world.read_key}"
            async with browser_page.expect_download(timeout=15_000) as info:
                with contextlib.suppress(PlaywrightError):  # "Download is starting": no document was loaded
                    await browser_page.goto(url)
            download = await info.value
            assert download.suggested_filename == path.rsplit("/", 1)[-1]
            assert await browser_page.title() != "ran"
        async with httpx.AsyncClient(base_url=base) as plain:
            headers = (await plain.get("/healthz")).headers
        assert headers["x-content-type-options"] == "nosniff"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, timeout=30)
