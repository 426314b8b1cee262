"""The .checkpoint parser: Kafka's OffsetCheckpoint rules; torn files are values, never raised."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.streams.checkpoint import ChangelogOffset, CheckpointFile, parse_checkpoint
from agent.streams.codec import DecodeError

CL = "app-counts-changelog"


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        pytest.param(
            f"0\n1\n{CL} 2 41\n".encode(),
            CheckpointFile((ChangelogOffset(CL, 2, 41),)),
            id="one entry, as Kafka Streams 3.9 writes it",
        ),
        pytest.param(
            f"0\n2\n{CL} 0 426\n{CL} 1 372\n".encode(),
            CheckpointFile((ChangelogOffset(CL, 0, 426), ChangelogOffset(CL, 1, 372))),
            id="two entries in file order",
        ),
        pytest.param(
            f"0\n1\n{CL} 0 -4\n".encode(),
            CheckpointFile((), unknown=((CL, 0),)),
            id="-4 is a registered store with no known offset: absent, not an offset",
        ),
        pytest.param(
            f"0\n2\n{CL} 0 -2\n{CL} 1 7\n".encode(),
            CheckpointFile((ChangelogOffset(CL, 1, 7),), skipped_invalid=1),
            id="another negative offset is skipped and expected one entry fewer, as Kafka does",
        ),
        pytest.param(b"0\n0\n", CheckpointFile(()), id="empty map (Kafka deletes such files)"),
        pytest.param(
            f"0\r\n1\r\n{CL}\t3   9 \r\n".encode(),
            CheckpointFile((ChangelogOffset(CL, 3, 9),)),
            id="CRLF lines and any whitespace between fields (Java's \\s+), trailing ignored",
        ),
        pytest.param(
            f"0\n1\n{CL} 0 9223372036854775807".encode(),
            CheckpointFile((ChangelogOffset(CL, 0, 2**63 - 1),)),
            id="no final newline; the largest long",
        ),
    ],
)
def test_valid_checkpoints(data: bytes, expected: CheckpointFile) -> None:
    assert parse_checkpoint(data) == expected


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        pytest.param(b"", "ends after 0 lines", id="empty file: truncated while written"),
        pytest.param(b"0\n", "ends after 1 lines", id="only the version"),
        pytest.param(
            f"0\n2\n{CL} 0 5\n".encode(), "expected 2 entries, found 1", id="torn after one entry"
        ),
        pytest.param(
            f"0\n1\n{CL} 0 5\n{CL} 1 6\n".encode(),
            "expected 1 entries, found 2",
            id="more entries than counted",
        ),
        pytest.param(f"0\n1\n{CL} 0\n".encode(), "line 3: expected '<topic>", id="half a line"),
        pytest.param(
            f"0\n1\n {CL} 0 5\n".encode(),
            "line 3: expected '<topic>",
            id="leading whitespace makes four fields in Java",
        ),
        pytest.param(f"1\n1\n{CL} 0 5\n".encode(), "unknown format version 1", id="version 1"),
        pytest.param(b"x\n", "line 1: expected the format version", id="not a checkpoint"),
        pytest.param(b"0\n-1\n", "line 2: expected the entry count", id="negative count"),
        pytest.param(f"0\n1\n{CL} -1 5\n".encode(), "expected a partition", id="bad partition"),
        pytest.param(
            f"0\n1\n{CL} 0 9223372036854775808\n".encode(),
            "expected an offset",
            id="offset beyond a long",
        ),
        pytest.param(f"0\n1\n{CL} 0 5x\n".encode(), "expected an offset", id="offset not a number"),
        pytest.param(b"0\n1\n\xff\xfe 0 5\n", "not UTF-8", id="binary garbage"),
    ],
)
def test_torn_or_foreign_files_are_error_values(data: bytes, reason: str) -> None:
    result = parse_checkpoint(data)

    assert isinstance(result, DecodeError)
    assert result.what == ".checkpoint"
    assert reason in result.reason


@given(st.binary(max_size=200))
def test_never_raises_on_any_bytes(data: bytes) -> None:
    assert isinstance(parse_checkpoint(data), CheckpointFile | DecodeError)


@settings(max_examples=40)  # each example parses every prefix of its file
@given(
    st.lists(
        st.tuples(
            st.from_regex(r"[A-Za-z0-9._-]{1,30}", fullmatch=True),
            st.integers(0, 2**31 - 1),
            st.integers(0, 2**63 - 1),
        ),
        max_size=20,
    )
)
def test_every_prefix_of_a_written_file_is_whole_or_an_error(
    entries: list[tuple[str, int, int]],
) -> None:
    lines = ["0", str(len(entries))] + [f"{t} {p} {o}" for t, p, o in entries]
    data = ("\n".join(lines) + "\n").encode()

    full = parse_checkpoint(data)
    assert full == CheckpointFile(tuple(ChangelogOffset(*e) for e in entries))
    for cut in range(len(data)):
        torn = parse_checkpoint(data[:cut])
        # A prefix parses only if it cuts inside the last line's offset digits,
        # which no reader can tell from a smaller offset: Kafka's own writer
        # avoids that by writing a .tmp file and moving it over atomically.
        assert isinstance(torn, DecodeError) or torn.offsets[:-1] == full.offsets[:-1]
