"""The byte reader: Java's string encodings, varints, counts, and failures as values."""

from collections.abc import Callable

import pytest

from agent.streams.codec import DecodeError, Reader, decode_modified_utf8, run_decoder


def read(data: bytes, parse: Callable[[Reader], object]) -> object:
    return run_decoder("Test", data, parse)


# --- java.io.DataOutputStream strings ----------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "text"),
    [
        pytest.param(b"stream", "stream", id="ascii is plain UTF-8"),
        pytest.param("é-ü".encode(), "é-ü", id="two-byte characters are plain UTF-8"),
        # writeUTF never writes a zero byte: U+0000 becomes the overlong C0 80.
        pytest.param(b"a\xc0\x80b", "a\x00b", id="C0 80 is U+0000"),
        pytest.param(b"\xc0\x80", "\x00", id="a lone NUL"),
        # U+1F600 is the surrogate pair D83D DE00, each half written as 3 bytes (CESU-8).
        pytest.param(b"x\xed\xa0\xbd\xed\xb8\x80", "x\U0001f600", id="surrogate pair joins"),
        pytest.param(b"\xc0\x80\xed\xa0\xbd\xed\xb8\x80", "\x00\U0001f600", id="NUL and pair"),
        # Java strings can hold a lone surrogate; it must not make the text unprintable.
        pytest.param(b"\xed\xa0\xbd", "\ufffd", id="lone high surrogate becomes U+FFFD"),
    ],
)
def test_modified_utf8(raw: bytes, text: str) -> None:
    assert decode_modified_utf8(raw) == text


def test_write_utf_length_is_unsigned() -> None:
    # writeUTF allows 65535 bytes; a signed read would see 40000 as negative.
    data = (40000).to_bytes(2, "big") + b"a" * 40000

    assert read(data, Reader.java_utf) == "a" * 40000


def test_malformed_modified_utf8_is_a_decode_error() -> None:
    # Java's readUTF throws UTFDataFormatException for a byte that starts no sequence.
    result = read(b"\x00\x02\xffa", Reader.java_utf)

    assert isinstance(result, DecodeError)
    assert result.what == "Test"
    assert "UnicodeDecodeError" in result.reason


@pytest.mark.parametrize(
    ("data", "count", "text"),
    [
        pytest.param(b"\x00a\x00b", 2, "ab", id="UTF-16BE code units"),
        pytest.param(b"", 0, "", id="zero chars"),
        pytest.param(b"\xd8\x3d\xde\x00", 2, "\U0001f600", id="a pair is one character"),
        pytest.param(b"\xd8\x3d\x00a", 2, "\ufffda", id="lone surrogate becomes U+FFFD"),
    ],
)
def test_write_chars(data: bytes, count: int, text: str) -> None:
    assert read(data, lambda r: r.java_chars(count)) == text


# --- varints and flexible-version fields -------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "value"),
    [
        (b"\x00", 0),
        (b"\x7f", 127),
        (b"\x80\x01", 128),
        (b"\xff\xff\xff\xff\x0f", 2**32 - 1),
    ],
)
def test_unsigned_varint(data: bytes, value: int) -> None:
    assert read(data, Reader.uvarint) == value


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        pytest.param(b"\x80\x80", "truncated", id="continuation bit on the last byte"),
        pytest.param(b"\x80\x80\x80\x80\x80\x01", "longer than 5 bytes", id="six-byte varint"),
    ],
)
def test_bad_varints(data: bytes, reason: str) -> None:
    result = read(data, Reader.uvarint)

    assert isinstance(result, DecodeError)
    assert reason in result.reason


@pytest.mark.parametrize(
    ("data", "value"),
    [
        pytest.param(b"\x00", None, id="0 is null"),
        pytest.param(b"\x01", "", id="1 is empty"),
        pytest.param(b"\x03m1", "m1", id="length plus one"),
    ],
)
def test_compact_nullable_string(data: bytes, value: str | None) -> None:
    assert read(data, Reader.compact_nullable_string) == value


def test_compact_string_refuses_null() -> None:
    assert isinstance(read(b"\x00", Reader.compact_string), DecodeError)


def test_tagged_fields_are_collected_by_tag() -> None:
    data = b"\x02" + b"\x00\x02ab" + b"\x05\x00"

    assert read(data, Reader.tagged_fields) == {0: b"ab", 5: b""}


def test_tagged_field_count_beyond_the_input_is_refused_before_looping() -> None:
    # uvarint 2**31 claims two billion fields in a 5-byte input.
    result = read(b"\x80\x80\x80\x80\x08", Reader.tagged_fields)

    assert isinstance(result, DecodeError)
    assert "count 2147483648" in result.reason


# --- counts and lengths ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "parse", "reason"),
    [
        pytest.param(b"\xff\xff\xff\xfe", lambda r: r.count(4), "negative count -2", id="count"),
        pytest.param(
            b"\xff\xff\xff\xff", lambda r: r.count(4), "negative count -1", id="null not allowed"
        ),
        pytest.param(
            b"\xff\xff\xff\xfe", lambda r: r.nullable_count(4), "negative count -2", id="nullable"
        ),
        pytest.param(b"\xff\xfe", Reader.nullable_string, "negative string length", id="string"),
        pytest.param(b"\xff\xff", Reader.string, "null in a non-nullable", id="null string"),
        pytest.param(
            b"\xff\xff\xff\xfe", Reader.nullable_bytes, "negative bytes length", id="bytes"
        ),
        pytest.param(b"\xff\xff\xff\xff", Reader.bytes_, "null in a non-nullable", id="null"),
        pytest.param(
            b"\x7f\xff\xff\xff" + b"\x00" * 8,
            lambda r: r.count(8),
            "count 2147483647 needs at least 17179869176 bytes, 8 left",
            id="absurd count",
        ),
    ],
)
def test_bad_lengths_are_decode_errors(
    data: bytes, parse: Callable[[Reader], object], reason: str
) -> None:
    result = read(data, parse)

    assert isinstance(result, DecodeError)
    assert reason in result.reason
    assert result.offset == 0


def test_nullable_count_minus_one_is_null() -> None:
    assert read(b"\xff\xff\xff\xff", lambda r: r.nullable_count(4)) is None


def test_truncation_says_what_was_needed_and_where() -> None:
    def parse(r: Reader) -> object:
        r.version = 7
        r.int32()
        return r.int64()

    result = read(b"\x00" * 8, parse)

    assert result == DecodeError("Test", "truncated: needed 8 bytes at offset 4, 4 left", 4, 7)
    assert str(result) == "Test v7: truncated: needed 8 bytes at offset 4, 4 left (at byte 4)"


def test_trailing_bytes_are_counted() -> None:
    def parse(r: Reader) -> None:
        r.int16()
        r.expect_end()

    assert read(b"\x00\x01\x02\x03", parse) == DecodeError("Test", "2 trailing bytes", 2)


def test_uuid_is_canonical_text() -> None:
    data = bytes.fromhex("00112233445566778899aabbccddeeff")

    assert read(data, Reader.uuid) == "00112233-4455-6677-8899-aabbccddeeff"


def test_kafka_uuid_is_url_safe_base64_without_padding() -> None:
    # Kafka prints topic ids this way (Uuid.toString); 0xfb 0xff -> "-_" in the URL alphabet.
    data = b"\xfb\xff" + b"\x00" * 14

    assert read(data, Reader.kafka_uuid) == "-_8AAAAAAAAAAAAAAAAAAA"


def test_stdlib_errors_inside_a_decoder_become_decode_errors() -> None:
    def parse(r: Reader) -> object:
        values = [r.int8()]
        return values[1]  # an IndexError, as a slip in a decoder would raise

    result = read(b"\x01", parse)

    assert isinstance(result, DecodeError)
    assert result.reason.startswith("IndexError")
    assert result.offset == 1


def test_bugs_that_are_not_input_errors_still_surface() -> None:
    # Only input errors are turned into values; a TypeError is a bug in our code.
    def parse(r: Reader) -> object:
        return r.int8() + "x"  # type: ignore[operator]

    with pytest.raises(TypeError):
        read(b"\x01", parse)
