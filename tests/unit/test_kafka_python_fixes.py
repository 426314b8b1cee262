"""kafka-python must hand over bytes that arrived just before the peer closed
(a broker's login-failure response), not only report the disconnection; and the
record batches ksmon produces are gzipped by ISA-L (``fast_gzip``), not by zlib at
kafka-python's level 9."""

import gzip
import socket

from kafka.net.transport import KafkaTCPTransport
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords, MemoryRecordsBuilder

from agent import fast_gzip, kafka_python_fixes


def transport_reading(sock: socket.socket) -> KafkaTCPTransport:
    # The event loop (``net``) is not used by a direct read.
    return KafkaTCPTransport(None, sock, host="127.0.0.1")


def test_bytes_before_the_close_are_delivered_then_the_close_is_reported() -> None:
    kafka_python_fixes.install()
    ours, broker = socket.socketpair()
    ours.setblocking(False)
    broker.sendall(b"\x00\x00\x00\x05error")  # the response, then at once the close
    broker.close()
    transport = transport_reading(ours)
    try:
        first = transport._sock_recv()
        second = transport._sock_recv()
    finally:
        ours.close()

    assert first == (b"\x00\x00\x00\x05error", None), "the response reaches the protocol"
    assert second[0] == b""
    assert "socket disconnected" in str(second[1]), "the close is still reported, right after"


def test_a_close_without_bytes_is_reported_at_once() -> None:
    kafka_python_fixes.install()
    ours, broker = socket.socketpair()
    ours.setblocking(False)
    broker.close()
    try:
        data, error = transport_reading(ours)._sock_recv()
    finally:
        ours.close()

    assert data == b""
    assert error is not None


def test_installing_twice_wraps_once() -> None:
    kafka_python_fixes.install()
    wrapped = KafkaTCPTransport.__dict__["_sock_recv"]
    kafka_python_fixes.install()

    assert KafkaTCPTransport.__dict__["_sock_recv"] is wrapped
    assert getattr(wrapped, "ksmon_wrapped", False)


GZIP = 1  # kafka-python's compression type for gzip
NONE = 0
RECORDS_AT = DefaultRecordBatchBuilder.HEADER_STRUCT.size  # a batch's records follow its header


def batch(values: list[bytes], compression_type: int) -> bytes:
    builder = MemoryRecordsBuilder(magic=2, compression_type=compression_type, batch_size=2**20)
    for value in values:
        # A fixed time: the two batches compared below must hold the same records.
        builder.append(timestamp=1_700_000_000_000, key=b"k", value=value)
    builder.close()
    return bytes(builder.buffer())


def test_produced_batches_are_gzipped_by_fast_gzip_and_read_back() -> None:
    values = [b'{"group":"g-%d","lag":0}' % n for n in range(50)]
    kafka_python_fixes.install()

    gzipped, plain = batch(values, GZIP), batch(values, NONE)

    assert gzipped[RECORDS_AT:] == fast_gzip.gzip_member(plain[RECORDS_AT:])
    assert gzipped[RECORDS_AT:] != gzip.compress(plain[RECORDS_AT:], mtime=0), "not zlib's"
    read = MemoryRecords(gzipped).next_batch()
    assert read.compression_type == GZIP
    assert [r.value for r in read] == values


def test_a_zlib_level_asked_for_is_honoured() -> None:
    payload = b"lag " * 1000

    fastest, slowest = (kafka_python_fixes.gzip_batch(payload, level) for level in (1, 9))

    assert gzip.decompress(fastest) == gzip.decompress(slowest) == payload
    assert (fastest[8], slowest[8]) == (4, 2), "zlib's XFL byte: the fastest, the slowest level"
