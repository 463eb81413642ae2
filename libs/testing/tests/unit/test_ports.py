"""Free ports for the servers the harness starts: outside the kernel's ephemeral range, never handed out twice."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from stockade.testing import ports
from stockade.testing.ports import ephemeral_range, free_port


def _bind(port: int) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", port))


@pytest.mark.skipif(ephemeral_range() is None, reason="no /proc/sys/net/ipv4/ip_local_port_range here")
def test_free_ports_sit_below_the_ephemeral_range_and_are_not_repeated() -> None:
    low, _ = ephemeral_range() or (0, 0)
    handed = [free_port() for _ in range(200)]
    assert len(set(handed)) == len(handed)
    assert all(10_000 <= p < low for p in handed)  # no outgoing connection is given one of them as its source
    _bind(handed[-1])  # and it is free


def test_a_port_in_use_is_not_handed_out(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as busy:
        busy.bind(("127.0.0.1", 0))
        taken = busy.getsockname()[1]
        busy.listen()
        real, first = ports._random.randrange, [taken]  # the first pick is the busy port, then chance

        def pick(low: int, high: int) -> int:
            return first.pop() if first else real(low, high)

        monkeypatch.setattr(ports, "ephemeral_range", lambda: (60_000, 61_000))
        monkeypatch.setattr(ports._random, "randrange", pick)
        port = free_port()
        assert not first and port != taken
        _bind(port)


def test_without_a_known_range_the_kernel_chooses(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(ports, "_RANGE_FILE", tmp_path / "missing")
    assert ephemeral_range() is None
    _bind(free_port())
