import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent.transport.buffer import BoundedBuffer


def test_records_wait_in_order_until_delivered() -> None:
    buffer = BoundedBuffer(max_records=10, max_bytes=1000)
    for n in range(3):
        buffer.offer(b"k", f"v{n}".encode())

    head = buffer.head(2)
    buffer.remove_head(head)

    assert [v for _, v in head] == [b"v0", b"v1"]
    assert [v for _, v in buffer.head(10)] == [b"v2"]


@pytest.mark.parametrize(
    ("max_records", "max_bytes", "offered", "kept", "dropped", "why"),
    [
        (3, 10_000, 5, [b"v2", b"v3", b"v4"], 2, "over the record bound: the oldest go"),
        (100, 8, 5, [b"v3", b"v4"], 3, "over the byte bound (3 bytes each with the key)"),
        (100, 1, 2, [b"v1"], 1, "one record over the byte bound alone still stays"),
    ],
)
def test_a_full_buffer_drops_the_oldest_and_counts_them(
    max_records: int, max_bytes: int, offered: int, kept: list[bytes], dropped: int, why: str
) -> None:
    buffer = BoundedBuffer(max_records, max_bytes)
    for n in range(offered):
        buffer.offer(b"k", f"v{n}".encode())

    assert [v for _, v in buffer.head(100)] == kept, why
    assert buffer.dropped == dropped
    assert buffer.size_bytes == 3 * len(kept)


def test_records_dropped_while_in_flight_are_not_removed_twice() -> None:
    buffer = BoundedBuffer(max_records=2, max_bytes=1000)
    buffer.offer(b"k", b"a")
    buffer.offer(b"k", b"b")
    in_flight = buffer.head(2)
    buffer.offer(b"k", b"c")  # drops "a" while it is being delivered

    buffer.remove_head(in_flight)

    assert [v for _, v in buffer.head(10)] == [b"c"], "b delivered and removed, c stays"


@given(
    max_records=st.integers(1, 6),
    max_bytes=st.integers(1, 40),
    before=st.lists(st.binary(max_size=12), max_size=6),
    offered=st.lists(st.binary(max_size=12), max_size=10),
)
def test_records_offered_at_once_are_kept_and_dropped_as_one_by_one(
    max_records: int, max_bytes: int, before: list[bytes], offered: list[bytes]
) -> None:
    """A poll's snapshots are handed over together (the reader is woken once): the
    buffer then holds, and has dropped, what offering them one by one would leave."""
    one_by_one, at_once = (
        BoundedBuffer(max_records, max_bytes),
        BoundedBuffer(max_records, max_bytes),
    )
    for payload in before:
        one_by_one.offer(b"k", payload)
        at_once.offer(b"k", payload)

    for payload in offered:
        one_by_one.offer(b"k", payload)
    at_once.offer_all([(b"k", payload) for payload in offered])

    assert at_once.head(100) == one_by_one.head(100)
    assert (at_once.dropped, at_once.size_bytes) == (one_by_one.dropped, one_by_one.size_bytes)


def test_a_reader_woken_by_records_offered_at_once_finds_them_all() -> None:
    buffer = BoundedBuffer(max_records=100, max_bytes=10_000)
    found: list[int] = []

    def reader() -> None:
        if buffer.wait(timeout=10):
            found.append(len(buffer.head(100)))

    thread = threading.Thread(target=reader)
    thread.start()
    buffer.offer_all([(b"k", f"v{n}".encode()) for n in range(50)])
    thread.join(10)

    assert found == [50]
