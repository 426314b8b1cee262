"""Ports handed to embedded servers stay clear of outgoing connections' ports."""

import socket
from pathlib import Path

import pytest

from agent.embedded import ports
from agent.embedded.ports import LOOPBACK, ephemeral_range, free_port


def test_ports_come_from_below_the_ephemeral_range_so_clients_cannot_take_them() -> None:
    low, _ = ephemeral_range()
    ports = [free_port() for _ in range(50)]
    assert all(1024 < port < low for port in ports), ports


def test_a_port_is_handed_out_once_per_process() -> None:
    ports = [free_port() for _ in range(200)]
    assert len(set(ports)) == len(ports)


def test_a_port_someone_else_holds_is_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
        held.bind((LOOPBACK, 0))
        held.listen()
        taken = held.getsockname()[1]
        low, _ = ephemeral_range()
        # Not a fixed port: in a whole test run this process may have handed any port out
        # already, or a broker may hold it (CI lost a run on low - 7).
        clear = next(p for p in range(low - 1, low - 1000, -1) if _clear(p))
        candidates = iter([taken, clear])
        monkeypatch.setattr(ports._chooser, "randrange", lambda *_: next(candidates))
        monkeypatch.setattr(ports, "ephemeral_range", lambda: (low, 60999))
        assert ports.free_port() == clear


def _clear(port: int) -> bool:
    """Whether ``free_port`` may hand ``port`` out: not handed out before, free now."""
    return port not in ports._handed_out and ports._can_bind(port)


def test_an_unreadable_range_file_falls_back_to_linux_default(tmp_path: Path) -> None:
    assert ephemeral_range(tmp_path / "missing") == (32768, 60999)
    garbled = tmp_path / "range"
    garbled.write_text("not numbers\n")
    assert ephemeral_range(garbled) == (32768, 60999)
    custom = tmp_path / "custom"
    custom.write_text("40000\t50000\n")
    assert ephemeral_range(custom) == (40000, 50000)
