"""The __consumer_offsets reader waits for the topic on a fresh cluster instead of
assigning nothing and idling for good, and lets the broker hold a fetch that finds
nothing new for 5 s."""

import threading

from agent.collect.offsets_tail import idle_fetch_wait_ms, wait_for_partitions


def test_it_keeps_looking_until_the_topic_exists() -> None:
    answers = iter([set(), set(), {0, 1, 2}])
    looked = []

    def lookup() -> set[int]:
        looked.append(1)
        return next(answers)

    assert wait_for_partitions(lookup, threading.Event(), interval=0.001) == {0, 1, 2}
    assert len(looked) == 3


def test_stopping_ends_the_wait_with_nothing() -> None:
    stop = threading.Event()
    stop.set()

    assert wait_for_partitions(set, stop, interval=60.0) == set()


def test_an_existing_topic_is_assigned_at_once() -> None:
    assert wait_for_partitions(lambda: {7}, threading.Event(), interval=60.0) == {7}


def test_an_idle_fetch_waits_5_s_but_less_than_the_request_timeout() -> None:
    assert idle_fetch_wait_ms(30_000) == 5000
    assert idle_fetch_wait_ms(None) == 5000  # kafka-python's default timeout, 30 s
    assert idle_fetch_wait_ms(4000) == 2000
