"""consumer_status judges a window's partitions all at once, as numpy columns; every
partition those do not fit is walked row by row. Both must give exactly what walking
every partition row by row gives (``_statuses(..., by_row=True)``, the original walk):
the same statuses, and each partition's runs, quarters and rewinds, value for value."""

import pickle
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.aggregation.judging import tuples
from agent.aggregation.judging.facts import Member, Partition, Poll, StoredPartitions
from agent.aggregation.judging.rules.base import Evaluation
from agent.aggregation.judging.rules.consumer_status import _statuses, _Track
from agent.aggregation.judging.window import SeriesWindow
from agent.config.schema import DetectorsConfig

T0 = 1_700_000_000.0
KEYS = [("in", 0), ("in", 1), ("in", 2), ("rep", 0), ("rep", 1)]

MEMBER = Member(
    member_id="m-1",
    client_id="c-1",
    host="h",
    instance_id=None,
    process=None,
    thread=None,
    decoded=False,
    broker_assigned=False,
    active=(),
    standby=(),
    warmup=(),
    offset_sums=(),
    assigned=(),
    next_rebalance_ms=None,
    endpoint=None,
    assignment_version=None,
    subscription_bytes=0,
    assignment_bytes=0,
)


def _poll(t: float, partitions: tuple[Partition, ...] | None, members: int, error: bool) -> Poll:
    return Poll(
        t=t,
        sequence=0,
        agent_mode="central",
        state="Stable" if members else "Empty",
        group_type="classic",
        is_streams=False,
        generation=None,
        group_epoch=None,
        rebalances=(),
        members=(MEMBER,) * members,
        partitions=partitions,
        topics=(),
        changelog_ends=None,
        subtopologies=(),
        max_message_bytes=None,
        cluster_totals=None,
        brokers=(),
        sidecar=None,
        errors=("offsets",) if error else (),
        lag_total=0,
        lag_partitions=0,
    )


@st.composite
def windows(draw: st.DrawFn) -> list[Poll]:
    """A series' polls, oldest first, each partition behaving one way (stuck, stuck and
    owned by nobody, moving, falling behind, anything): mostly the same partitions in the
    same order; at a rate drawn per window, a row missing, reordered or doubled, a value
    unknown, an offset going back, a poll without partitions (aged) or with errors, a
    group without members."""
    rnd = random.Random(draw(st.integers(0, 2**32)))
    noise = rnd.choice([0.0, 0.0, 0.0, 0.005, 0.02, 0.1])

    def rare() -> bool:
        return rnd.random() < noise

    keys = rnd.sample(KEYS, rnd.randint(1, len(KEYS)))
    behaviour = {key: rnd.choice(["stuck", "left", "moving", "behind", "any"]) for key in keys}
    committed = dict.fromkeys(keys, rnd.randint(0, 50))
    lag = dict.fromkeys(keys, rnd.randint(0, 5))
    members = rnd.choice([0, 1, 1, 1])
    polls = []
    t = T0
    for _ in range(rnd.choice([1, 2, rnd.randint(3, 45), 45])):
        t += rnd.choice([10.0] * 20 + [9.5, 10.25, 30.0])
        rows = []
        order = rnd.sample(keys, len(keys)) if rare() else keys
        for key in order:
            if rare():
                continue
            how = behaviour[key]
            if how == "moving":
                committed[key] += rnd.choice([0, 1, 2])
                lag[key] = rnd.choice([0, 1, 2])
            elif how == "behind":
                committed[key] += rnd.choice([0, 1, 2])
                lag[key] += rnd.choice([0, 1, 2])
            elif how == "any":
                committed[key] += rnd.choice([0, 0, 1, 3])
                lag[key] = rnd.choice([0, 1, 2, 5, 9])
            if rare():
                committed[key] -= rnd.randint(1, 3)  # reset back
            rows.append(
                Partition(
                    key[0],
                    key[1],
                    None,
                    None if rare() else committed[key],
                    None if rare() else lag[key],
                    None if behaviour[key] == "left" or rare() else "m-1",
                )
            )
            if rare():
                rows.append(rows[-1]._replace(lag=rnd.randint(0, 3)))
        if rare():
            members = 1 - members
        polls.append(_poll(t, None if rare() else tuple(rows), members, rare()))
    return polls


def _track(tr: _Track) -> tuple[object, ...]:
    """Every value of a track, with its type (a numpy integer is not an int here)."""
    return tuple(
        (name, type(v).__name__, v) for name in _Track.__slots__ for v in [getattr(tr, name)]
    )


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(windows(), st.sampled_from([60.0, 120.0, 300.0]))
def test_the_columns_judge_as_walking_every_row(polls: list[Poll], span: float) -> None:
    ev = Evaluation(SeriesWindow(polls), DetectorsConfig(consumer_status_window=span), "g")
    by_row = _statuses(ev, by_row=True)
    at_once = _statuses(ev)
    assert at_once[1:] == by_row[1:]  # ok, unassigned
    assert [(s.status, s.owner, _track(s.track)) for s in at_once[0]] == [
        (s.status, s.owner, _track(s.track)) for s in by_row[0]
    ]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(windows(), st.sampled_from([60.0, 120.0, 300.0]))
def test_a_window_read_back_from_the_state_store_judges_as_walking_every_row(
    polls: list[Poll], span: float
) -> None:
    # The streaming job's windows come back from the state store every batch, their
    # partitions' arrays built from the columns they were stored as.
    stored = tuples.thaw(pickle.loads(pickle.dumps(tuples.freeze(polls))))  # noqa: S301
    assert all(type(p.partitions) is StoredPartitions for p in stored if p.partitions)
    params = DetectorsConfig(consumer_status_window=span)
    by_row = _statuses(Evaluation(SeriesWindow(polls), params, "g"), by_row=True)
    at_once = _statuses(Evaluation(SeriesWindow(stored), params, "g"))
    assert at_once[1:] == by_row[1:]  # ok, unassigned
    assert [(s.status, s.owner, _track(s.track)) for s in at_once[0]] == [
        (s.status, s.owner, _track(s.track)) for s in by_row[0]
    ]


def test_a_stalled_window_judged_by_columns_as_by_rows() -> None:
    """The common case, fixed: every row clean, one partition stuck for the whole window."""
    polls = [
        _poll(
            T0 + 10 * i,
            (
                Partition("in", 0, None, 100, 7, "m-1"),
                Partition("in", 1, None, 10 * i, 1 if i % 2 else 0, "m-1"),
            ),
            1,
            False,
        )
        for i in range(40)
    ]
    ev = Evaluation(SeriesWindow(polls), DetectorsConfig(), "g")
    statuses, ok, unassigned = _statuses(ev)
    assert [(s.status, s.track.topic, s.track.partition) for s in statuses] == [
        ("stalled", "in", 0)
    ]
    assert (ok, unassigned) == (1, 0)
    assert [_track(s.track) for s in statuses] == [
        _track(s.track) for s in _statuses(ev, by_row=True)[0]
    ]
