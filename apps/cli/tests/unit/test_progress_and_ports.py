import socket

import pytest

from stockade.cli import progress
from stockade.cli.stack import StackConfig, StartupError, check_ports, find_nats_server


def test_starting_prints_ready_with_duration(capsys):
    with progress.starting("nats-server", "nats://127.0.0.1:14222"):
        pass
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("starting") and "nats-server" in out[0] and "14222" in out[0]
    assert out[1].startswith("ready") and out[1].endswith("ms)")


def test_starting_prints_why_it_failed(capsys):
    with pytest.raises(StartupError), progress.starting("database"):
        raise StartupError("disk full")
    err = capsys.readouterr().err
    assert "failed" in err and "database" in err and "disk full" in err


def test_busy_ports_are_named(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        cfg = StackConfig(
            state_dir=tmp_path, model_port=port, nats_port=0, prompt_port=0, ingest_port=0, toxicity_port=0
        )
        with pytest.raises(StartupError, match=f"model-api port {port}"):
            check_ports(cfg)


def test_the_wheel_nats_server_binary_is_found():
    assert find_nats_server().endswith("nats-server")
