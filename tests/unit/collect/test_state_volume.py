"""The filesystem under the state directory: statvfs's size and free-to-unprivileged bytes,
and a path that cannot be asked reported as text."""

import os
from pathlib import Path

from agent.collect.app_scrape import Scrape
from agent.collect.sidecar import SidecarCollector, SidecarSettings
from agent.collect.state_dir_reader import read_state_dir
from agent.collect.state_volume import StateVolume, read_state_volume

APP = "volapp"
URL = "http://127.0.0.1:9404/metrics"
# Other processes write to the same disk between two statvfs calls.
SLACK = 64 << 20


def test_size_and_available_are_what_statvfs_says_in_bytes(tmp_path: Path) -> None:
    before = os.statvfs(tmp_path)
    volume = read_state_volume(tmp_path)
    after = os.statvfs(tmp_path)

    assert volume.error is None
    assert volume.size_bytes == before.f_blocks * before.f_frsize
    assert volume.available_bytes is not None
    low = min(before.f_bavail, after.f_bavail) * before.f_frsize - SLACK
    high = max(before.f_bavail, after.f_bavail) * before.f_frsize + SLACK
    assert low <= volume.available_bytes <= high
    assert volume.available_bytes <= before.f_bfree * before.f_frsize + SLACK, (
        "free to an unprivileged writer: never the blocks reserved for root"
    )


def test_a_path_that_is_not_there_is_an_error_naming_it(tmp_path: Path) -> None:
    absent = tmp_path / "not-mounted"

    volume = read_state_volume(absent)

    assert volume == StateVolume(error=f"{absent}: No such file or directory")


def _collector(state_dir: Path | None, volume: StateVolume) -> tuple[SidecarCollector, list[Path]]:
    """A collector whose volume reader answers ``volume``, and the paths it was asked."""
    asked: list[Path] = []

    def reader(path: Path) -> StateVolume:
        asked.append(path)
        return volume

    settings = SidecarSettings(APP, URL, state_dir=state_dir)
    collector = SidecarCollector(
        settings,
        scraper=lambda _url, _timeout, _keep: Scrape(error="down"),
        state_dir_reader=read_state_dir,
        state_volume_reader=reader,
    )
    return collector, asked


def test_the_section_carries_the_volume_of_the_configured_state_dir(tmp_path: Path) -> None:
    c, asked = _collector(tmp_path, StateVolume(32 << 20, 5 << 20))

    info = c.report(c.observe(), ())

    assert asked == [tmp_path]
    assert (info.state_volume_size_bytes, info.state_volume_available_bytes) == (
        32 << 20,
        5 << 20,
    )
    assert info.state_volume_error is None


def test_a_volume_that_cannot_be_read_leaves_its_numbers_unknown(tmp_path: Path) -> None:
    (tmp_path / APP).mkdir()
    c, _ = _collector(tmp_path, StateVolume(error=f"{tmp_path}: Permission denied"))

    info = c.report(c.observe(), ())

    assert (info.state_volume_size_bytes, info.state_volume_available_bytes) == (None, None)
    assert info.state_volume_error == f"{tmp_path}: Permission denied"
    assert info.state_dir_readable, "the directory itself is read on its own"


def test_without_a_state_dir_nothing_is_asked() -> None:
    c, asked = _collector(None, StateVolume(1, 1))

    info = c.report(c.observe(), ())

    assert asked == []
    assert info.state_volume_size_bytes is None
    assert info.state_volume_error is None
