"""The /skills tree loads through agentskills-http's real HTTPStaticFileSkillProvider over a real socket.

agentskills-http needs Python >= 3.12 and the workspace runs 3.11, so the client runs in a subprocess: this
interpreter if it has the package, else the one named by AGENTSKILLS_PYTHON, else a cached side venv
(stockade.testing.sidevenv) built from any Python >= 3.12 found on the machine (pyenv or PATH); only when
there is none does the test skip, and it says so.
"""

import asyncio
import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import uvicorn

from stockade.prompt_api.main import create_app
from stockade.testing.ports import free_port
from stockade.testing.sidevenv import cached_venv, find_python

PROBE = Path(__file__).with_name("agentskills_probe.py")


def _client_python() -> str | None:
    for candidate in (sys.executable, os.environ.get("AGENTSKILLS_PYTHON")):
        if not candidate:
            continue
        ok = subprocess.run([candidate, "-c", "import agentskills_http"], capture_output=True, timeout=60)
        if ok.returncode == 0:
            return candidate
    python = find_python(12)
    if python is None:
        return None
    return str(cached_venv("agentskills-http-0.7", python, ["agentskills-http>=0.7,<0.8"]))


@pytest.fixture
async def live(db_url, settings_for):
    """The real app under uvicorn on a free port, in this event loop."""
    port = free_port()
    app = create_app(settings_for(db_url))
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None, access_log=False)
    )
    task = asyncio.create_task(server.serve())
    for _ in range(300):
        if server.started:
            break
        await asyncio.sleep(0.05)
    assert server.started
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, timeout=20)


async def test_skill_loads_through_agentskills_http(live, world, sample_skill):
    python = await asyncio.to_thread(_client_python)
    if python is None:
        pytest.skip(
            "agentskills-http needs Python >= 3.12: install one (pyenv install 3.12) or set AGENTSKILLS_PYTHON"
        )
    import httpx

    skill_body, SKILL_MD, PNG = sample_skill

    async with httpx.AsyncClient(base_url=live) as client:
        r = await client.post(
            "/skills/active-version", headers={"X-API-Key": world.write_key}, json=skill_body(world.direct.id)
        )
        assert r.status_code == 201, r.text
    proc = await asyncio.create_subprocess_exec(
        python,
        str(PROBE),
        f"{live}/skills",
        world.read_key,
        world.direct.id,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout=120)
    assert proc.returncode == 0, err.decode()
    seen = json.loads(out)
    assert seen["discovered"] == ["incident-response"]
    assert seen["metadata"]["name"] == "incident-response" and seen["metadata"]["metadata"] == {
        "owner": "sre"
    }
    assert seen["body"].strip() == SKILL_MD.split("---\n", 2)[2].strip()
    assert seen["resources"] == {
        "references": ["severity.md"],
        "scripts": ["page.sh"],
        "assets": ["diagram.png"],
    }
    assert "SEV1" in seen["reference"] and "paging" in seen["script"]
    assert base64.b64decode(seen["asset_b64"]) == PNG
    assert seen["files"] == [
        "SKILL.md",
        "assets/diagram.png",
        "docs/deep/notes.txt",
        "references/severity.md",
        "scripts/page.sh",
    ]
    assert seen["nested"] == "nested file"
    assert seen["missing"] == "ResourceNotFoundError"
