"""The cached exposition is byte for byte what prometheus_client writes for
``AgentCollector`` (whose output the golden files freeze), gzip or not."""

import gzip
from collections import Counter
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, generate_latest

from agent.exposition.agent_metrics import AgentCollector, LagGranularity
from agent.exposition.agent_state import AgentState
from agent.exposition.http import _accepts_gzip
from agent.exposition.metrics_cache import MetricsExposition
from agent.model import (
    SCHEMA_VERSION,
    AgentInfo,
    GroupInfo,
    MemberInfo,
    PartitionInfo,
    PollInfo,
    Snapshot,
)
from agent.model.poll_result import PollResult, SidecarReport
from agent.transport.sink import SinkStats
from tests.unit.exposition.test_agent_metrics_golden import (
    plain_snapshot,
    sidecar_info,
    streams_snapshot,
)

AGENT = AgentInfo("agent-1", "0", "central")


def state_with(snapshots: list[Snapshot], sidecar: SidecarReport | None = None) -> AgentState:
    state = AgentState(
        ["prod", "staging"],
        sink_stats=lambda: [SinkStats("kafka", 10, 1, 2, 3, "timeout", 1_700_000_000.0)],
        offsets_readers=lambda: {"prod": True, "staging": False},
    )
    state.record(
        PollResult(
            "prod",
            1,
            1_700_000_000.0,
            0.5,
            snapshots,
            requests=Counter({"ListGroups": 1, "OffsetFetch": 1}),
            sidecar=sidecar,
        )
    )
    state.record(PollResult("staging", 1, 1_700_000_000.0, 30.0, error="NoBrokersAvailable"))
    return state


def both(state: AgentState, mode: str, granularity: LagGranularity) -> tuple[bytes, bytes]:
    registry = CollectorRegistry()
    registry.register(
        AgentCollector(state, agent_id="agent-1", mode=mode, lag_granularity=granularity)
    )
    expected = generate_latest(registry)
    exposition = MetricsExposition(
        state, agent_id="agent-1", mode=mode, lag_granularity=granularity
    )
    return expected, b"".join(exposition.render(gzipped=False).chunks)


@pytest.mark.parametrize("granularity", ["partition", "topic"])
def test_the_cached_text_is_what_prometheus_client_writes(granularity: LagGranularity) -> None:
    expected, cached = both(
        state_with([streams_snapshot(), plain_snapshot()]), "central", granularity
    )
    assert cached == expected


def test_the_sidecar_families_too() -> None:
    info = sidecar_info()
    snapshot = Snapshot(
        schema_version=SCHEMA_VERSION,
        cluster="prod",
        agent=AgentInfo("app-0", "0", "sidecar", pod="app-0"),
        poll=PollInfo(1, 1_700_000_000.0, 0.2),
        group=GroupInfo("app", "classic", "Stable", "consumer", "stream", 1, is_streams=True),
        sidecar=info,
    )
    expected, cached = both(
        state_with([snapshot], SidecarReport("app", info)), "sidecar", "partition"
    )
    assert cached == expected


odd_text = st.text(
    alphabet=st.sampled_from(["a", "z", '"', "\\", "\n", "é", "{", "}", "=", ",", " "]),
    min_size=1,
    max_size=8,
)
numbers = st.one_of(
    st.integers(-(10**18), 10**18),
    st.floats(allow_nan=True, allow_infinity=True),
)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(odd_text, odd_text, st.integers(0, 500), numbers, numbers, st.booleans()),
        max_size=6,
    )
)
def test_any_label_text_and_any_number_come_out_the_same(
    rows: list[tuple[str, str, int, float, float, bool]],
) -> None:
    snapshots = [
        Snapshot(
            schema_version=SCHEMA_VERSION,
            cluster="prod",
            agent=AGENT,
            poll=PollInfo(1, 1_700_000_000.0, 0.5),
            group=GroupInfo(group, "classic", "Stable", "consumer", None, 1),
            partitions=(
                PartitionInfo(topic, partition, 10, 0, 7, int(lag), seconds if seconds else None),
            ),
        )
        for group, topic, partition, lag, seconds, _ in rows
        if lag == lag and abs(lag) < 1e18  # noqa: PLR0124 - NaN is no lag (lags are ints)
    ]
    expected, cached = both(state_with(snapshots), "central", "partition")
    assert cached == expected


optional_offsets = st.one_of(st.none(), st.integers(0, 10**13))
partition_rows = st.lists(
    st.builds(
        PartitionInfo,
        topic=st.sampled_from(["in", "out", 'we"ird\\topic\n']),
        partition=st.integers(0, 3),
        log_end_offset=optional_offsets,
        log_start_offset=optional_offsets,
        committed_offset=optional_offsets,
        lag=optional_offsets,
        lag_seconds=st.one_of(st.none(), numbers),
        owner_member_id=st.sampled_from([None, "m-1", 'm"2', "gone"]),
    ),
    max_size=5,
)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(odd_text, odd_text, partition_rows), max_size=4),
    st.sampled_from(["partition", "topic"]),
)
def test_the_per_partition_families_written_in_bulk_come_out_the_same(
    groups: list[tuple[str, str, list[PartitionInfo]]], granularity: LagGranularity
) -> None:
    # Groups of two clusters that share partitions (one log-end series each), members
    # that own partitions and one that owns none, values that are unknown.
    members = (
        MemberInfo("m-1", 'client "1"', "/10.0.0.1"),
        MemberInfo('m"2', "client\\2", "/10.0.0.2\n"),
    )
    snapshots = [
        Snapshot(
            schema_version=SCHEMA_VERSION,
            cluster=cluster,
            agent=AGENT,
            poll=PollInfo(1, 1_700_000_000.0, 0.5),
            group=GroupInfo(group, "classic", "Stable", "consumer", None, 1),
            members=members,
            partitions=tuple(rows),
        )
        for cluster, group, rows in groups
    ]
    expected, cached = both(state_with(snapshots), "central", granularity)
    assert cached == expected


def many_partitions(group: str, count: int) -> Snapshot:
    members = (MemberInfo("m-1", "client-1", "/10.0.0.1"),)
    rows = tuple(
        PartitionInfo(f"topic-{n % 7}", n, n + 5, 0, n, 5, 1.5, "m-1", None, 1)
        for n in range(count)
    )
    return Snapshot(
        schema_version=SCHEMA_VERSION,
        cluster="prod",
        agent=AGENT,
        poll=PollInfo(1, 1_700_000_000.0, 0.5),
        group=GroupInfo(group, "classic", "Stable", "consumer", "range", 1),
        members=members,
        partitions=rows,
    )


@pytest.mark.parametrize(
    "snapshots",
    [
        pytest.param(lambda: [streams_snapshot(), plain_snapshot()], id="small"),
        # Per-partition families of more text than a packed family holds: several
        # compressed pieces per family, and plain pieces that end inside a member.
        pytest.param(lambda: [many_partitions(f"g-{n}", 2_000) for n in range(4)], id="large"),
    ],
)
def test_the_gzip_members_read_as_the_plain_text(snapshots: Callable[[], list[Snapshot]]) -> None:
    state = state_with(snapshots())
    exposition = MetricsExposition(state, agent_id="agent-1", mode="central")

    pieces = list(exposition.render(gzipped=False).chunks)
    plain = b"".join(pieces)
    packed = b"".join(exposition.render(gzipped=True).chunks)

    assert gzip.decompress(packed) == plain
    assert plain == both(state, "central", "partition")[0], "what prometheus_client writes"
    assert max(len(p) for p in pieces) <= 256 * 1024, "a plain scrape is decompressed in pieces"
    for gzipped, text in ((False, plain), (True, packed)):
        assert exposition.render(gzipped=gzipped).length == len(text), "Content-Length"
    assert (
        list(exposition.render(gzipped=True).chunks)[1]
        is list(exposition.render(gzipped=True).chunks)[1]
    ), "the body is compressed once per poll, not at every scrape"


def test_a_poll_changes_the_body_only_when_recorded_and_updated() -> None:
    state = state_with([plain_snapshot()])
    exposition = MetricsExposition(state, agent_id="agent-1", mode="central")
    before = b"".join(exposition.render(gzipped=False).chunks)

    state.record(PollResult("prod", 2, 1_700_000_010.0, 0.5, [streams_snapshot()]))
    stale = b"".join(exposition.render(gzipped=False).chunks)
    exposition.update()
    fresh = b"".join(exposition.render(gzipped=False).chunks)

    assert b'group="billing"' in stale
    assert b'group="app"' not in stale.split(b"ksmon_groups")[1]
    assert b'ksmon_polls_total{kafka_cluster="prod",result="ok"} 2.0' in stale, "head is fresh"
    assert b'group="app"' in fresh
    assert b'group="billing"' not in fresh
    assert before != fresh


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("gzip", True),
        ("gzip, deflate, br", True),
        ("deflate;q=1.0, gzip;q=0.5", True),
        ("gzip;q=0", False),
        ("identity", False),
        ("", False),
        ("*", True),
    ],
)
def test_accept_encoding(header: str, expected: bool) -> None:
    assert _accepts_gzip(header) is expected
