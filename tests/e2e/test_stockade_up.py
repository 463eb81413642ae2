"""`stockade up` end to end: the embedded stack starts, answers health checks, and stops with no orphans."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from stockade.contracts import subjects
from stockade.runtime.nats import probe_connect

pytestmark = [pytest.mark.e2e, pytest.mark.nats]

STOCKADE = str(Path(sys.executable).parent / "stockade")


def free_ports(n: int) -> list[int]:
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


def processes_with_marker(run_id: str) -> list[int]:
    """PIDs whose environment carries STOCKADE_UP_ID=run_id (the children of one `stockade up`)."""
    found = []
    needle = f"STOCKADE_UP_ID={run_id}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


class Stack:
    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir
        self.nats, self.prompt, self.model, self.ingest, self.toxicity, self.trust = free_ports(6)
        self.run_id = f"test-{os.getpid()}-{time.monotonic_ns()}"
        self.output: list[str] = []
        self.proc: subprocess.Popen[str] | None = None

    def start(self, timeout_s: float = 120.0, *extra: str) -> None:
        env = dict(os.environ, STOCKADE_UP_ID=self.run_id, PYTHONUNBUFFERED="1")
        self.proc = subprocess.Popen(
            [
                STOCKADE,
                "up",
                "--state-dir",
                str(self.state_dir),
                "--nats-port",
                str(self.nats),
                "--prompt-port",
                str(self.prompt),
                "--model-port",
                str(self.model),
                "--ingest-port",
                str(self.ingest),
                "--toxicity-port",
                str(self.toxicity),
                "--trust-port",
                str(self.trust),
                *extra,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
        )
        deadline = time.monotonic() + timeout_s
        assert self.proc.stdout is not None
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            self.output.append(line.rstrip())
            if "Press Ctrl-C to stop." in line:
                return
        raise AssertionError("stack did not come up:\n" + "\n".join(self.output))

    def stop(self, sig: int = signal.SIGINT, timeout_s: float = 60.0) -> int:
        assert self.proc is not None
        self.proc.send_signal(sig)
        out, _ = self.proc.communicate(timeout=timeout_s)
        self.output.extend(out.splitlines())
        return self.proc.returncode

    def text(self) -> str:
        return "\n".join(self.output)


@pytest.fixture
def stack(tmp_path):
    s = Stack(tmp_path / "state")
    yield s
    if s.proc and s.proc.poll() is None:
        s.proc.kill()
        s.proc.wait()
    for pid in processes_with_marker(s.run_id):  # never leave anything behind, even on failure
        os.kill(pid, signal.SIGKILL)


async def nats_health(url: str, subject: str, state_dir: Path) -> dict:
    """As the trust-broker's own NATS user (stockade up runs deploy/nats's users with generated passwords)."""
    passwords = json.loads((state_dir / "nats" / "credentials.json").read_text())
    nc = await probe_connect(url, timeout_s=2, user="trust-broker", password=passwords["trust-broker"])
    try:
        return json.loads((await nc.request(subject, b"{}", timeout=3)).data)
    finally:
        await nc.close()


def test_up_serves_health_everywhere_then_ctrl_c_leaves_nothing(stack):
    stack.start()
    text = stack.text()
    parts = ("nats-server", "database", "prompt-api", "model-api", "guardrail-ingest", "toxicity-classifier")
    for part in (*parts, "trust-broker"):
        assert f"starting {part}" in text or f"starting  {part}" in text or part in text
    assert "demo API key" in text and "stk_" in text
    for port in (stack.prompt, stack.model, stack.ingest, stack.toxicity):
        for path in ("/healthz", "/readyz"):
            r = httpx.get(f"http://127.0.0.1:{port}{path}", timeout=5)
            assert r.status_code == 200, (port, path, r.text)
    nats_url = f"nats://127.0.0.1:{stack.nats}"
    assert asyncio.run(nats_health(nats_url, subjects.TRUST_HEALTH, stack.state_dir))["status"] == "ok"
    with pytest.raises(Exception, match="(?i)authorization"):  # nobody connects anonymously (review N5)
        asyncio.run(probe_connect(nats_url, timeout_s=2))
    children = processes_with_marker(stack.run_id)
    assert len(children) >= 6, children  # nats-server + five services (+ stockade itself)

    assert stack.stop(signal.SIGINT) == 0, stack.text()
    assert "stopped cleanly." in stack.text()
    time.sleep(0.2)
    assert processes_with_marker(stack.run_id) == []
    assert (stack.state_dir / "stockade.db").exists() and (stack.state_dir / "nats").is_dir()


def test_demo_key_works_and_data_survives_a_restart(stack):
    stack.start()
    key = next(line.split()[-1] for line in stack.output if "demo API key" in line)
    project = next(line.split()[-1] for line in stack.output if "demo project" in line)
    r = httpx.get(
        f"http://127.0.0.1:{stack.prompt}/prompts", params={"project_id": project}, headers={"X-API-Key": key}
    )
    assert r.status_code == 200, r.text

    user, password = next(line.split()[-3::2] for line in stack.output if "console sign-in" in line)
    console = f"http://127.0.0.1:{stack.model}"
    with httpx.Client(base_url=console, headers={"Origin": console}) as browser:
        signed_in = browser.post("/login", data={"email": user, "password": password})
        assert signed_in.status_code in (200, 303), signed_in.text
        assert "secure" not in signed_in.headers["set-cookie"].lower()  # plain http: stockade up turns it off
        models = browser.get("/api/platform/models")
        assert models.status_code == 200, models.text
    assert httpx.get(f"{console}/api/platform/models").status_code == 401
    assert stack.stop(signal.SIGTERM) == 0
    assert processes_with_marker(stack.run_id) == []

    again = Stack(stack.state_dir)
    again.nats, again.prompt, again.model, again.ingest, again.toxicity, again.trust = free_ports(6)
    try:
        again.start()
        assert key in again.text(), "the demo key of the first run still works and is shown again"
        r = httpx.get(
            f"http://127.0.0.1:{again.prompt}/prompts",
            params={"project_id": project},
            headers={"X-API-Key": key},
        )
        assert r.status_code == 200
    finally:
        assert again.stop() == 0
        assert processes_with_marker(again.run_id) == []


def test_demo_guardrails_config_points_the_toxicity_check_at_the_stack(stack):
    from stockade.guardrails import load_config

    stack.start()
    path = stack.state_dir / "guardrails.yaml"
    assert str(path) in stack.text()
    toxicity = load_config(path).guardrails.checks.toxicity
    assert toxicity.enabled and toxicity.url == f"http://127.0.0.1:{stack.toxicity}/classify"
    reply = httpx.post(toxicity.url, json={"inputs": "see you at the lake on Sunday"}, timeout=10)
    assert reply.status_code == 200 and {item["label"] for item in reply.json()} == {
        "toxic",
        "offensive",
        "non-toxic",
    }
    assert stack.stop() == 0


def test_busy_port_fails_fast_with_advice(stack):
    blocker = socket.socket()
    blocker.bind(("127.0.0.1", stack.prompt))
    blocker.listen()
    try:
        proc = subprocess.run(
            [
                STOCKADE,
                "up",
                "--state-dir",
                str(stack.state_dir),
                "--nats-port",
                str(stack.nats),
                "--prompt-port",
                str(stack.prompt),
                "--model-port",
                str(stack.model),
                "--ingest-port",
                str(stack.ingest),
                "--toxicity-port",
                str(stack.toxicity),
                "--trust-port",
                str(stack.trust),
            ],
            capture_output=True,
            text=True,
            timeout=60,
            env=dict(os.environ, STOCKADE_UP_ID=stack.run_id),
        )
    finally:
        blocker.close()
    assert proc.returncode == 1
    assert f"prompt-api port {stack.prompt}" in proc.stderr and "already in use" in proc.stderr
    assert processes_with_marker(stack.run_id) == []


def test_first_start_seeds_demo_content_the_console_shows_and_no_demo_skips_it(stack, tmp_path):
    from stockade.cli.demo_content import PROMPT, SKILL, guardrail_runs

    stack.start()
    assert "demo content" in stack.text()
    key = next(line.split()[-1] for line in stack.output if "demo API key" in line)
    project = next(line.split()[-1] for line in stack.output if "demo project" in line)
    headers = {"X-API-Key": key}
    prompts = httpx.get(
        f"http://127.0.0.1:{stack.prompt}/prompts", params={"project_id": project}, headers=headers
    ).json()
    assert [(p["prompt_name"], p["active_version"]) for p in prompts] == [(PROMPT, 2)]
    skills = httpx.get(
        f"http://127.0.0.1:{stack.prompt}/skills", params={"project_id": project}, headers=headers
    ).json()
    assert [s["skill_name"] for s in skills] == [SKILL]
    # the runs reach the run store through guardrail-ingest (wait until its workers stored them)
    expected = sum(len(b["events"]) for b in guardrail_runs(project))
    status: dict = {}
    for _ in range(300):
        status = httpx.get(f"http://127.0.0.1:{stack.ingest}/api/v1/status", timeout=5).json()
        if status["inserted"] >= expected:
            break
        time.sleep(0.1)
    assert status["inserted"] == expected, status

    # the console shows the prompt as soon as the demo user signs in (no key to paste)
    user, password = next(line.split()[-3::2] for line in stack.output if "console sign-in" in line)
    console = f"http://127.0.0.1:{stack.model}"
    with httpx.Client(base_url=console, headers={"Origin": console}) as browser:
        assert browser.post("/login", data={"email": user, "password": password}).status_code == 303
        shown = browser.get(f"/projects/{project}")
        assert shown.status_code == 200 and f'data-prompt="{PROMPT}"' in shown.text
    assert stack.stop() == 0

    bare = Stack(tmp_path / "bare")
    try:
        bare.start(120.0, "--no-demo")
        assert "demo content" not in bare.text()
        key = next(line.split()[-1] for line in bare.output if "demo API key" in line)
        project = next(line.split()[-1] for line in bare.output if "demo project" in line)
        empty = httpx.get(
            f"http://127.0.0.1:{bare.prompt}/prompts",
            params={"project_id": project},
            headers={"X-API-Key": key},
        )
        assert empty.json() == []
        assert bare.stop() == 0
    finally:
        if bare.proc is not None and bare.proc.poll() is None:
            bare.proc.kill()
            bare.proc.wait()
        for pid in processes_with_marker(bare.run_id):  # never leave anything behind, even on failure
            os.kill(pid, signal.SIGKILL)


def test_the_console_shows_the_seeded_runs_and_new_ones_read_through_ingest(stack):
    """The run store of `stockade up` is chdb, which guardrail-ingest's process holds: the console's run pages read
    it through guardrail-ingest (guardrail.cmd.read_runs.v2) with no setting from the user."""
    import re
    import uuid
    from datetime import UTC, datetime

    from stockade.cli.demo_content import guardrail_runs

    stack.start()
    project = next(line.split()[-1] for line in stack.output if "demo project" in line)
    ingest_key = next(line.split("=", 1)[1] for line in stack.output if "STOCKADE_INGEST_KEY=" in line)
    user, password = next(line.split()[-3::2] for line in stack.output if "console sign-in" in line)
    seeded = guardrail_runs(project)
    console = f"http://127.0.0.1:{stack.model}"
    with httpx.Client(base_url=console, headers={"Origin": console}, timeout=15) as browser:
        assert browser.post("/login", data={"email": user, "password": password}).status_code == 303

        def listed() -> set[str]:
            page = browser.get("/runs", params={"project": project})
            assert page.status_code == 200, page.text
            return set(re.findall(r'data-run-id="([^"]+)"', page.text))

        def eventually_listed(wanted: set[str]) -> set[str]:
            shown: set[str] = set()
            for _ in range(150):  # the sink workers store what ingest accepted within a moment
                shown = listed()
                if wanted <= shown:
                    break
                time.sleep(0.2)
            return shown

        wanted = {b["run"]["run_id"] for b in seeded}
        assert eventually_listed(wanted) == wanted
        everything = browser.get("/runs")  # no project filter: the newest-events-first path
        assert everything.status_code == 200 and wanted <= set(
            re.findall(r'data-run-id="([^"]+)"', everything.text)
        )

        run = browser.get("/run/demo-blocked", params={"project": project})
        assert run.status_code == 200 and "exfiltration" in run.text and "SECRET" in run.text
        overview = browser.get("/runs/overview", params={"project": project})
        assert overview.status_code == 200 and "Trust rejections" in overview.text
        export = browser.get("/runs/export.json", params={"project": project})
        assert export.status_code == 200
        assert len(export.json()["events"]) == sum(len(b["events"]) for b in seeded)

        # a run an agent sends now shows up too
        new_run = f"e2e-{uuid.uuid4().hex[:8]}"
        event = {
            "event_id": str(uuid.uuid4()),
            "kind": "check",
            "name": "pii",
            "occurred_at": datetime.now(UTC).isoformat(),
            "run_id": new_run,
            "action": "mask",
            "payload": {"stage": "input", "duration_ms": 9.5, "finding_types": {"EMAIL_ADDRESS": 1}},
        }
        sent = httpx.post(
            f"http://127.0.0.1:{stack.ingest}/api/v1/guardrails/clickhouse",
            json={
                "run": {"run_id": new_run, "project_id": project, "agent_id": "e2e-agent"},
                "events": [event],
            },
            headers={"X-API-Key": ingest_key},
            timeout=10,
        )
        assert sent.status_code in (200, 202), sent.text
        assert new_run in eventually_listed(wanted | {new_run})
        page = browser.get(f"/run/{new_run}", params={"project": project})
        assert page.status_code == 200 and "EMAIL_ADDRESS" in page.text
    assert stack.stop() == 0
