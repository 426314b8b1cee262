"""kafka-python must hand over bytes that arrived just before the peer closed
(a broker's login-failure response), not only report the disconnection; and the
record batches ksmon produces are gzipped at level 6, not kafka-python's 9."""

import socket

from kafka.net.transport import KafkaTCPTransport
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords, MemoryRecordsBuilder

from agent import kafka_python_fixes


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
# A gzip header's XFL byte: 2 after the slowest level (9), 4 after the fastest, 0 between.
XFL_AT = DefaultRecordBatchBuilder.HEADER_STRUCT.size + 8


def gzip_batch(values: list[bytes]) -> bytes:
    builder = MemoryRecordsBuilder(magic=2, compression_type=GZIP, batch_size=2**20)
    for value in values:
        builder.append(timestamp=None, key=b"k", value=value)
    builder.close()
    return bytes(builder.buffer())


def test_produced_batches_are_gzipped_at_level_6_and_read_back() -> None:
    values = [b'{"group":"g-%d","lag":0}' % n for n in range(50)]
    kafka_python_fixes.install()

    batch = gzip_batch(values)

    assert batch[XFL_AT] == 0, "neither the slowest level (9) nor the fastest"
    read = MemoryRecords(batch).next_batch()
    assert read.compression_type == GZIP
    assert [r.value for r in read] == values
