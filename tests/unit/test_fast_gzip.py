"""What ``fast_gzip`` writes is gzip that Python's zlib reads back, a member at a time
and as members one after the other, and the same bytes for the same text."""

import gzip
import zlib

from hypothesis import given
from hypothesis import strategies as st

from agent import fast_gzip


@given(st.lists(st.binary(max_size=5000), max_size=6))
def test_pieces_compressed_one_after_the_other_read_back_as_their_text(
    pieces: list[bytes],
) -> None:
    packer = fast_gzip.packer()
    member = b"".join([*(packer.compress(piece) for piece in pieces), packer.flush()])

    assert gzip.decompress(member) == b"".join(pieces)


@given(st.lists(st.text(max_size=2000).map(str.encode), min_size=1, max_size=4))
def test_members_one_after_the_other_read_as_one_stream(texts: list[bytes]) -> None:
    members = b"".join(fast_gzip.gzip_member(text) for text in texts)

    assert gzip.decompress(members) == b"".join(texts)


def test_the_same_text_gives_the_same_bytes_and_a_gzip_header_without_a_time() -> None:
    text = b'ksmon_partition_lag{group="g",partition="0"} 12.0\n' * 500

    first, second = fast_gzip.gzip_member(text), fast_gzip.gzip_member(bytearray(text))

    assert first == second
    assert first[:3] == b"\x1f\x8b\x08", "gzip's magic and deflate"
    assert first[4:8] == b"\x00\x00\x00\x00", "no modification time"
    assert len(first) < len(text) / 10, "repetitive text shrinks"
    assert zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(first) == text
