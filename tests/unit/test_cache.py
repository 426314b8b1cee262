from pathlib import Path

import pytest

from agent.embedded.cache import cache_dir, ensure_built


def test_cache_dir_prefers_ksmon_then_xdg_then_home(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KSMON_CACHE_DIR", "/explicit")
    monkeypatch.setenv("XDG_CACHE_HOME", "/xdg")
    assert cache_dir() == Path("/explicit")
    monkeypatch.delenv("KSMON_CACHE_DIR")
    assert cache_dir() == Path("/xdg/ksmon")
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache_dir() == Path.home() / ".cache" / "ksmon"


def test_a_failed_build_leaves_nothing_that_looks_complete(tmp_path: Path) -> None:
    destination = tmp_path / "kafka" / "4.3.1"

    def half_download(scratch: Path) -> None:
        (scratch / "partial.jar").write_text("half")
        raise OSError("connection reset")

    with pytest.raises(OSError, match="connection reset"):
        ensure_built(destination, half_download)

    assert not destination.exists()
    assert list(destination.parent.iterdir()) == [destination.parent / ".4.3.1.lock"]


def test_a_complete_build_is_reused_without_building_again(tmp_path: Path) -> None:
    destination = tmp_path / "thing"
    builds = []

    def build(scratch: Path) -> None:
        builds.append(scratch)
        (scratch / "artifact").write_text("ok")

    assert ensure_built(destination, build) == destination
    assert ensure_built(destination, build) == destination

    assert len(builds) == 1
    assert (destination / "artifact").read_text() == "ok"
