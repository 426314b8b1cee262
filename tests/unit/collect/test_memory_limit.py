"""The app container's memory limit from a cgroup file, on a real file."""

from pathlib import Path

import pytest

from agent.collect.memory_limit import MemoryLimit, parse_memory_limit, read_memory_limit


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"536870912\n", 536870912),  # cgroup v2 memory.max with a limit
        (b"max\n", None),  # v2: no limit
        (b"9223372036854771712\n", None),  # v1 memory.limit_in_bytes without a limit
        (b"4611686018427387904", None),  # 2^62: no machine has that much
        (b"1073741824", 1073741824),  # v1 with a limit, no newline
    ],
)
def test_cgroup_limits_and_unlimited(content: bytes, expected: int | None) -> None:
    assert parse_memory_limit(content) == expected


@pytest.mark.parametrize("content", [b"", b"-1\n", b"0\n", b"1.5G\n", b"\xff\xfe"])
def test_content_that_is_not_a_limit_is_a_reason(content: bytes) -> None:
    parsed = parse_memory_limit(content)
    assert isinstance(parsed, str)
    assert "expected" in parsed


def test_reading_a_v2_file(tmp_path: Path) -> None:
    path = tmp_path / "memory.max"
    path.write_text("268435456\n")
    assert read_memory_limit(path) == MemoryLimit(268435456, f"file {path}")
    path.write_text("max\n")
    assert read_memory_limit(path) == MemoryLimit(None, f"file {path} (unlimited)")


def test_a_missing_or_garbled_file_is_an_error_not_a_crash(tmp_path: Path) -> None:
    missing = read_memory_limit(tmp_path / "absent" / "memory.max")
    assert missing.bytes is None
    assert missing.error is not None
    assert "cannot read" in missing.error
    garbled = tmp_path / "memory.limit_in_bytes"
    garbled.write_text("lots\n")
    limit = read_memory_limit(garbled)
    assert limit.bytes is None
    assert limit.error == f"{garbled}: expected a byte count or \"max\", got 'lots'"
