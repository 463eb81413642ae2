"""``stockade.runtime.http.serve`` on a real socket: X-Forwarded-Proto/-For count only with ``http.proxy_headers``
and only from ``http.forwarded_allow_ips``; HSTS goes with https (direct or per a trusted proxy), never with
plain http."""

import json
import subprocess
import sys
import time

import httpx
import pytest

from stockade.testing.ports import free_port, port_open

SERVER = """
import sys
from fastapi import Request
from stockade.runtime.app import create_service_app
from stockade.runtime.http import serve
from stockade.runtime.settings import HttpSettings, ServiceSettings

settings = ServiceSettings(http=HttpSettings.model_validate_json(sys.argv[1]))
app = create_service_app(settings, title="t", health_subject=None, uses_db=False, uses_nats=False)

@app.get("/seen")
async def seen(request: Request) -> dict[str, str]:
    return {"scheme": request.url.scheme, "client": request.client.host if request.client else ""}

serve(app, settings)
"""
FORWARDED = {"X-Forwarded-Proto": "https", "X-Forwarded-For": "203.0.113.9"}


def _serve(tmp_path, **http):
    port = free_port()
    config = {"host": "127.0.0.1", "port": port, **http}
    log = (tmp_path / f"server-{port}.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVER, json.dumps(config)], stdout=log, stderr=subprocess.STDOUT
    )
    deadline = time.monotonic() + 30
    while not port_open("127.0.0.1", port):
        assert proc.poll() is None and time.monotonic() < deadline, (
            tmp_path / f"server-{port}.log"
        ).read_text()
        time.sleep(0.05)
    return proc, f"http://127.0.0.1:{port}"


@pytest.mark.parametrize(
    ("http", "scheme", "client"),
    [
        ({}, "http", "127.0.0.1"),  # default: proxy headers ignored
        ({"proxy_headers": True}, "https", "203.0.113.9"),  # trusted: 127.0.0.1 by default
        ({"proxy_headers": True, "forwarded_allow_ips": "10.0.0.0/8"}, "http", "127.0.0.1"),  # not trusted
        (
            {"proxy_headers": True, "forwarded_allow_ips": "127.0.0.0/8", "hsts_max_age_s": 0},
            "https",
            "203.0.113.9",
        ),
    ],
)
def test_forwarded_headers_count_only_from_a_trusted_proxy(tmp_path, http, scheme, client):
    proc, base = _serve(tmp_path, **http)
    try:
        with httpx.Client(base_url=base) as c:
            plain = c.get("/seen")
            forwarded = c.get("/seen", headers=FORWARDED)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert plain.json() == {"scheme": "http", "client": "127.0.0.1"}
    assert "strict-transport-security" not in plain.headers
    assert forwarded.json() == {"scheme": scheme, "client": client}
    hsts = forwarded.headers.get("strict-transport-security")
    if scheme == "https" and http.get("hsts_max_age_s", 1):
        assert hsts == "max-age=31536000"
    else:
        assert hsts is None
    assert forwarded.headers["x-content-type-options"] == "nosniff"
