import json
from pathlib import Path

from agent.transport.spool import DONE, PART, SpoolDirectorySink, completed_files, read_spool


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


def record(n: int, size: int = 0) -> bytes:
    return json.dumps({"n": n, "pad": "x" * size}, separators=(",", ":")).encode()


def test_records_become_readable_only_in_completed_files(tmp_path: Path) -> None:
    sink = SpoolDirectorySink(tmp_path, clock=Clock())
    sink.send(b"k", record(1))
    sink.send(b"k", record(2))

    assert list(read_spool(tmp_path)) == [], "the current file is still .part"
    sink.close()

    assert [json.loads(r)["n"] for r in read_spool(tmp_path)] == [1, 2]
    assert not list(tmp_path.glob(f"*{PART}"))
    assert sink.stats().sent == 2


def test_files_rotate_by_size(tmp_path: Path) -> None:
    # A file is completed once it has reached rotate_bytes: ~79-byte records and a
    # 50-byte bound give one record per file.
    sink = SpoolDirectorySink(tmp_path, rotate_bytes=50, clock=Clock())
    for n in range(5):
        sink.send(b"k", record(n, size=60))
    sink.close()

    assert len(completed_files(tmp_path)) == 5
    assert [json.loads(r)["n"] for r in read_spool(tmp_path)] == [0, 1, 2, 3, 4]


def test_files_rotate_by_age(tmp_path: Path) -> None:
    clock = Clock()
    sink = SpoolDirectorySink(tmp_path, rotate_interval=60, clock=clock)
    sink.send(b"k", record(1))
    clock.now += 30
    sink.send(b"k", record(2))
    assert completed_files(tmp_path) == [], "30 s: still the same file"
    clock.now += 31
    sink.send(b"k", record(3))

    assert len(completed_files(tmp_path)) == 1, "61 s: the first file was completed"
    sink.close()
    assert [json.loads(r)["n"] for r in read_spool(tmp_path)] == [1, 2, 3]


def test_retention_deletes_the_oldest_files_and_counts_their_records(tmp_path: Path) -> None:
    sink = SpoolDirectorySink(tmp_path, rotate_bytes=1, max_bytes=250, clock=Clock())
    for n in range(6):
        sink.send(b"k", record(n, size=60))
    sink.close()

    remaining = [json.loads(r)["n"] for r in read_spool(tmp_path)]
    assert remaining == [3, 4, 5], "about 80 bytes a file: three fit in 250"
    assert sink.stats().dropped == 3


def test_a_crash_leaves_complete_lines_and_loses_only_the_torn_one(tmp_path: Path) -> None:
    part = tmp_path / f"snapshots-20230101T000000-000007{PART}"
    part.write_bytes(record(1) + b"\n" + record(2) + b"\n" + b'{"n":3,"pa')

    sink = SpoolDirectorySink(tmp_path, clock=Clock())
    sink.send(b"k", record(4))
    sink.close()

    assert [json.loads(r)["n"] for r in read_spool(tmp_path)] == [1, 2, 4]
    assert (tmp_path / f"snapshots-20230101T000000-000007{DONE}").exists()


def test_a_payload_with_a_newline_is_refused_and_counted(tmp_path: Path) -> None:
    sink = SpoolDirectorySink(tmp_path, clock=Clock())
    sink.send(b"k", b'{"a":\n1}')
    sink.close()

    assert list(read_spool(tmp_path)) == []
    stats = sink.stats()
    assert (stats.sent, stats.errors) == (0, 1)
    assert stats.last_error is not None
    assert "newline" in stats.last_error


def test_disk_errors_are_counted_not_raised(tmp_path: Path) -> None:
    # A file where the spool directory should be: every write fails, none raises.
    blocker = tmp_path / "spool"
    blocker.write_text("not a directory")

    sink = SpoolDirectorySink(blocker, clock=Clock())
    sink.send(b"k", record(1))
    sink.send(b"k", record(2))

    stats = sink.stats()
    assert stats.sent == 0
    assert stats.errors >= 2
    assert stats.last_error is not None
