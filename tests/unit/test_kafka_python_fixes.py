"""kafka-python must hand over bytes that arrived just before the peer closed
(a broker's login-failure response), not only report the disconnection."""

import socket

from kafka.net.transport import KafkaTCPTransport

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
