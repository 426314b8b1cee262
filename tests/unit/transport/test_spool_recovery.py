"""A spool directory that cannot be written at start (a volume not mounted yet, say):
one warning per failed write, and one line when writing works again."""

import logging
from pathlib import Path

import pytest

from agent.transport.spool import SpoolDirectorySink, read_spool


def test_a_spool_directory_that_appears_later_is_written_and_said_to_work_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    spool = tmp_path / "spool"
    spool.write_text("a file where the directory should be")
    with caplog.at_level(logging.INFO, logger="agent.transport.spool"):
        sink = SpoolDirectorySink(spool)
        sink.send(b"k", b'{"n": 1}')
        sink.send(b"k", b'{"n": 2}')
        spool.unlink()
        spool.mkdir()
        sink.send(b"k", b'{"n": 3}')
        sink.send(b"k", b'{"n": 4}')
        sink.close()

    said = [(r.levelno, r.getMessage()) for r in caplog.records]
    warnings = [m for level, m in said if level == logging.WARNING]
    assert len(warnings) == 3, said  # the directory at start, then each of two writes
    assert [m for level, m in said if level == logging.INFO] == [
        f"spool directory {spool}: writing snapshots again, after 3 failures"
    ]
    assert list(read_spool(spool)) == [b'{"n": 3}', b'{"n": 4}']
    assert sink.stats().errors == 3
