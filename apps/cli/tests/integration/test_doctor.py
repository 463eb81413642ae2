import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

STOCKADE = str(Path(sys.executable).parent / "stockade")


@pytest.mark.nats
@pytest.mark.postgres
def test_doctor_reports_reachable_servers_and_versions(nats_url, nats_server_version, postgres_url):
    env = dict(os.environ, NATS_URL=nats_url, POSTGRES_URL=postgres_url)
    out = subprocess.run([STOCKADE, "doctor", "--json"], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    probes = {p["part"]: p for p in map(json.loads, out.stdout.splitlines())}
    assert probes["nats"]["reachable"] and probes["nats"]["version"] == ".".join(
        map(str, nats_server_version[:3])
    )
    assert "JetStream enabled" in probes["nats"]["note"]
    assert probes["postgresql"]["reachable"] and probes["postgresql"]["version"][:2].isdigit()


def test_doctor_says_what_to_do_when_nothing_answers(unused_tcp_port):
    env = dict(
        os.environ,
        NATS_URL=f"nats://127.0.0.1:{unused_tcp_port}",
        POSTGRES_URL=f"postgresql://postgres@127.0.0.1:{unused_tcp_port}/postgres",
    )
    out = subprocess.run([STOCKADE, "doctor"], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0
    lines = {line.split()[1]: line for line in out.stdout.splitlines() if line.startswith("--")}
    assert "stockade up" in lines["nats"] and "POSTGRES_URL" in lines["postgresql"]
