"""The ``.checkpoint`` file of a Kafka Streams task directory (``OffsetCheckpoint``).

Text, one value per line (``streams-internals.md`` section 7.2)::

    0                                  format version, must be 0
    2                                  number of entries
    app-counts-changelog 0 41          <topic> <partition> <offset>, split on whitespace
    app-counts-changelog 3 -4

The offset is that of the last *applied* changelog record (restore resumes at
offset + 1). ``-4`` means "registered, offset unknown" and readers treat it as
absent; any other negative offset is invalid: Kafka skips it with a warning
and expects one entry fewer. A file that ends early, has a wrong count or a
malformed line was torn (or is not a checkpoint): that is a ``DecodeError``
value, never an exception, as in the rest of this package.

>>> parse_checkpoint(b"0\\n1\\napp-counts-changelog 2 41\\n").offsets
(ChangelogOffset(topic='app-counts-changelog', partition=2, offset=41),)
"""

import re
from dataclasses import dataclass
from typing import Final

from agent.streams.codec import INT32_MAX, INT64_MAX, DecodeError

WHAT: Final = ".checkpoint"
VERSION: Final = 0
OFFSET_UNKNOWN: Final = -4
# Java's BufferedReader.readLine ends a line at \n, \r or \r\n, and OffsetCheckpoint
# splits a line on \s+, which in Java is exactly these six ASCII characters.
_LINE_END: Final = re.compile(r"\r\n|\r|\n")
_JAVA_WHITESPACE: Final = re.compile(r"[ \t\n\x0b\f\r]+")
# Integer.parseInt / Long.parseLong: an optional sign and digits (ASCII here).
_JAVA_INTEGER: Final = re.compile(r"[+-]?[0-9]+")
_MAX_DIGITS: Final = 20  # more cannot be a long; refuse before int() does any work


@dataclass(frozen=True, slots=True)
class ChangelogOffset:
    topic: str
    partition: int
    offset: int  # the last applied record's offset, >= 0


@dataclass(frozen=True, slots=True)
class CheckpointFile:
    offsets: tuple[ChangelogOffset, ...]  # in file order; known offsets only
    unknown: tuple[tuple[str, int], ...] = ()  # (topic, partition) written as -4
    skipped_invalid: int = 0  # negative offsets other than -4, skipped as Kafka does


def parse_checkpoint(data: bytes) -> CheckpointFile | DecodeError:
    """The entries of one ``.checkpoint`` file's bytes, or why they are not a whole one."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        return DecodeError(WHAT, f"not UTF-8 text (byte {e.start})")
    lines = _LINE_END.split(text)
    if lines and lines[-1] == "":
        lines.pop()  # the newline that ends the last line
    expected = _header(lines)
    if isinstance(expected, DecodeError):
        return expected
    offsets: list[ChangelogOffset] = []
    unknown: list[tuple[str, int]] = []
    skipped = 0
    for number, line in enumerate(lines[2:], start=3):
        entry = _entry(line)
        if isinstance(entry, str):
            return DecodeError(WHAT, f"line {number}: {entry}")
        topic, partition, offset = entry
        if offset >= 0:
            offsets.append(ChangelogOffset(topic, partition, offset))
        elif offset == OFFSET_UNKNOWN:
            unknown.append((topic, partition))
        else:
            skipped += 1
    found = len(offsets) + len(unknown)
    if found != expected - skipped:
        return DecodeError(
            WHAT,
            f"expected {expected - skipped} entries, found {found} (torn or concurrently written?)",
        )
    return CheckpointFile(tuple(offsets), tuple(unknown), skipped)


def _header(lines: list[str]) -> int | DecodeError:
    """The entry count, once the version line and the count line check out."""
    if not lines:
        return DecodeError(WHAT, "ends after 0 lines, before the format version (torn?)")
    version = _java_int(lines[0], INT32_MAX)
    if version is None:
        return DecodeError(WHAT, f"line 1: expected the format version, got {lines[0][:40]!r}")
    if version != VERSION:
        return DecodeError(WHAT, f"line 1: unknown format version {version} (only 0 exists)")
    if len(lines) < 2:  # noqa: PLR2004 - the version line and the count line
        return DecodeError(WHAT, "ends after 1 lines, before the entry count (torn?)")
    expected = _java_int(lines[1], INT32_MAX)
    if expected is None or expected < 0:
        return DecodeError(WHAT, f"line 2: expected the entry count, got {lines[1][:40]!r}")
    return expected


def _entry(line: str) -> tuple[str, int, int] | str:
    """(topic, partition, offset) of one entry line, or what is wrong with it."""
    pieces = _JAVA_WHITESPACE.split(line)
    while pieces and pieces[-1] == "":  # Java's split drops trailing empty strings
        pieces.pop()
    if len(pieces) != 3:  # noqa: PLR2004 - topic, partition, offset
        return f"expected '<topic> <partition> <offset>', got {line[:80]!r}"
    topic, partition_text, offset_text = pieces
    partition = _java_int(partition_text, INT32_MAX)
    offset = _java_int(offset_text, INT64_MAX)
    if partition is None or partition < 0:
        return f"expected a partition number, got {partition_text[:40]!r}"
    if offset is None:
        return f"expected an offset, got {offset_text[:40]!r}"
    return topic, partition, offset


def _java_int(text: str, maximum: int) -> int | None:
    if len(text) > _MAX_DIGITS + 1 or not _JAVA_INTEGER.fullmatch(text):
        return None
    value = int(text)
    return value if -maximum - 1 <= value <= maximum else None
