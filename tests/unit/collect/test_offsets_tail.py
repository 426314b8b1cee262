"""The __consumer_offsets reader waits for the topic on a fresh cluster instead of
assigning nothing and idling for good."""

import threading

from agent.collect.offsets_tail import wait_for_partitions


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
