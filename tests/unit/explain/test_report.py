"""The explain report from two hand-made polls: rates, load per thread and instance,
shares, and what the text and JSON views show."""

import json
from dataclasses import replace

import pytest

from agent.explain.render import render_report
from agent.explain.report import FindingLine, build_report, partition_rates
from agent.model import (
    SCHEMA_VERSION,
    AgentInfo,
    DecodeIssue,
    GroupInfo,
    MemberInfo,
    PartitionInfo,
    PollInfo,
    RebalanceEvent,
    Snapshot,
    StreamsMemberInfo,
    StreamsTask,
    SubtopologyInfo,
    TaskOffsetSum,
    TopicInfo,
    TopicPartitionRef,
)
from agent.model.records import to_json_bytes
from agent.streams.topology import parse_topology

AGENT = AgentInfo("a", "0", "central")


def member(
    process: str, thread: int, active: dict[str, int], standby: tuple[str, ...] = ()
) -> MemberInfo:
    client = f"app-{process}-StreamThread-{thread}-consumer"
    return MemberInfo(
        member_id=f"{client}-{thread}",
        client_id=client,
        client_host=f"/10.0.0.{thread}",
        streams=StreamsMemberInfo(
            process_id=process,
            thread_index=thread,
            active_tasks=tuple(
                StreamsTask(task, (TopicPartitionRef("in", partition),))
                for task, partition in active.items()
            ),
            standby_tasks=tuple(StreamsTask(t) for t in standby),
            task_offset_sums=tuple(TaskOffsetSum(t, 1234) for t in standby),
        ),
    )


def poll(at: float, ends: dict[int, int], members: tuple[MemberInfo, ...]) -> Snapshot:
    return Snapshot(
        schema_version=SCHEMA_VERSION,
        cluster="prod",
        agent=AGENT,
        poll=PollInfo(1, at, 0.1),
        group=GroupInfo("app", "classic", "Stable", "consumer", "stream", 1, is_streams=True),
        members=members,
        partitions=tuple(
            PartitionInfo("in", p, end, 0, end - 10, 10, 1.5) for p, end in sorted(ends.items())
        ),
        topics=(TopicInfo("app-counts-changelog", 4, internal_kind="changelog", size_bytes=2048),),
    )


MEMBERS = (
    member("hot", 1, {"0_0": 0}),
    member("hot", 2, {"0_1": 1}, standby=("0_3",)),
    member("cold", 1, {"0_2": 2, "0_3": 3}),
)


@pytest.mark.parametrize(
    ("before", "after", "elapsed", "expected", "why"),
    [
        ({0: 100}, {0: 600}, 5.0, {("in", 0): 100.0}, "500 records in 5 s"),
        ({0: 100}, {0: 100}, 5.0, {("in", 0): 0.0}, "an idle partition has rate 0, not unknown"),
        ({0: 100}, {0: 50}, 5.0, {}, "a log that shrank (topic re-created) has no rate"),
        ({}, {0: 50}, 5.0, {}, "a partition seen only once has no rate"),
        ({0: 100}, {0: 600}, 0.0, {}, "polls at the same instant give no rate"),
    ],
)
def test_partition_rates(
    before: dict[int, int],
    after: dict[int, int],
    elapsed: float,
    expected: dict[tuple[str, int], float],
    why: str,
) -> None:
    assert partition_rates(poll(0.0, before, ()), poll(elapsed, after, ())) == expected, why


def two_polls() -> tuple[Snapshot, Snapshot]:
    return (
        poll(100.0, {0: 0, 1: 0, 2: 0, 3: 0}, MEMBERS),
        poll(110.0, {0: 9000, 1: 8000, 2: 500, 3: 500}, MEMBERS),
    )


def test_load_per_thread_and_instance_is_the_sum_of_active_task_rates() -> None:
    report = build_report(*two_polls())

    hot, cold = report.instances
    assert hot.process_id == "hot", "instances are listed by load, heaviest first"
    assert [t.load_records_per_second for t in hot.threads] == [900.0, 800.0]
    assert hot.load_records_per_second == 1700.0
    assert cold.load_records_per_second == 100.0
    assert hot.load_share == pytest.approx(1700 / 1800)
    assert report.sampled_seconds == 10.0


def test_standby_tasks_add_no_load_but_show_their_local_state() -> None:
    report = build_report(*two_polls())

    thread = report.instances[0].threads[1]
    standby = [t for t in thread.tasks if t.kind == "standby"]
    assert [(t.task, t.records_per_second, t.offset_sum) for t in standby] == [("0_3", None, 1234)]
    assert "0_3 (state at changelog offset sum 1234)" in render_report(report)


def test_members_without_streams_data_are_listed_not_dropped() -> None:
    undecoded = MemberInfo(
        "m-x", "weird-client", "/10.9.9.9", decode_errors=(DecodeIssue("AssignmentInfo", "v99"),)
    )
    first, second = two_polls()
    second = replace(second, members=(*second.members, undecoded))

    report = build_report(first, second)

    assert report.other_members == ("m-x (weird-client, /10.9.9.9)",)
    assert report.problems == ("member m-x: AssignmentInfo did not decode: v99",)


def test_text_names_instances_threads_tasks_rates_and_lag() -> None:
    first, second = two_polls()
    second = replace(second, rebalances=(RebalanceEvent(7, 1_700_000_000.0, member_count=3),))

    text = render_report(build_report(first, second))

    assert text.startswith(
        "app on cluster prod: Kafka Streams application, Stable, 2 instances, 3 stream threads"
    )
    assert "hot  host /10.0.0.1  load 1,700 rec/s (94% of the group)" in text
    assert "0_0: in-0 900 rec/s lag 10 (1.5 s)" in text
    assert "generation 7 at 2023-11-14 22:13:20Z, 3 members" in text
    assert "app-counts-changelog  changelog  4" in text
    assert "FINDINGS: unknown" in text, "without the job, the report says findings are unknown"


def test_findings_come_first_most_severe_first() -> None:
    findings = [
        FindingLine("partition_skew", "info", "topic in partition 0", None, "one key"),
        FindingLine(
            "hot_partitions_colocated", "warning", "instance hot", 1.0, "two hot tasks", '{"a":1}'
        ),
    ]
    text = render_report(build_report(*two_polls(), findings, "the job at http://j:8480"))

    assert text.index("FINDINGS (the job at http://j:8480)") < text.index("INSTANCES")
    assert text.index("hot_partitions_colocated") < text.index("partition_skew")
    assert 'evidence: {"a":1}' in text


def test_json_view_is_the_same_tree() -> None:
    report = build_report(*two_polls())

    plain = json.loads(to_json_bytes(report))

    assert plain["group"] == "app"
    assert [i["process_id"] for i in plain["instances"]] == ["hot", "cold"]
    assert plain["instances"][0]["threads"][0]["tasks"][0]["partitions"][0]["lag"] == 10
    assert plain["findings"] is None


def test_a_kip1071_groups_topology_is_shown_as_its_broker_holds_it() -> None:
    broker = (
        SubtopologyInfo("0", ("in",), (), ("app-by-key-repartition",), ()),
        SubtopologyInfo("1", (), ("app-by-key-repartition",), (), ("app-counts-changelog",)),
    )
    first, second = (replace(poll(t, {0: 100}, MEMBERS), subtopologies=broker) for t in (0, 5))
    report = build_report(first, second)
    assert report.topology_source == "broker"
    zero, one = report.topology
    assert (zero.reads, zero.writes, zero.active_tasks) == (("in",), ("app-by-key-repartition",), 4)
    assert (one.reads, one.stores, one.active_tasks) == (
        ("app-by-key-repartition",),
        ("counts",),
        0,
    )
    text = render_report(report)
    assert "TOPOLOGY (as the broker holds it)" in text
    assert "sub-topology 1: 0 active tasks; reads app-by-key-repartition; stores counts" in text


def test_a_configured_description_names_processors_and_internal_topics_as_on_the_broker() -> None:
    described = parse_topology(
        "Sub-topology: 0\n"
        "  Source: src (topics: [in])\n    --> key\n"
        "  Processor: key (stores: [])\n    --> sink\n    <-- src\n"
        "  Sink: sink (topic: by-key-repartition)\n    <-- key\n"
        "Sub-topology: 1\n"
        "  Source: again (topics: [by-key-repartition])\n    --> count\n"
        "  Processor: count (stores: [counts])\n    --> none\n    <-- again\n"
    )
    second = poll(5, {0: 100}, MEMBERS)
    report = build_report(poll(0, {0: 100}, MEMBERS), second, topology=described)
    assert report.topology_source == "config", "a configured text wins: it names processors"
    zero, one = report.topology
    assert zero.writes == ("app-by-key-repartition",), "prefixed with the application id"
    assert (one.reads, one.stores, one.processors) == (
        ("app-by-key-repartition",),
        ("counts",),
        ("count",),
    )
    assert "from the configured Topology#describe() text" in render_report(report)


def test_warmup_tasks_are_shown_apart_and_add_no_load() -> None:
    cold = MEMBERS[2].streams
    assert cold is not None
    warming = replace(MEMBERS[2], streams=replace(cold, warmup_tasks=(StreamsTask("0_1"),)))
    members = (*MEMBERS[:2], warming)
    report = build_report(poll(0, {2: 0, 3: 0}, members), poll(5, {2: 50, 3: 50}, members))
    (instance,) = [i for i in report.instances if i.process_id == "cold"]
    assert [t.task for t in instance.threads[0].tasks if t.kind == "warmup"] == ["0_1"]
    assert instance.load_records_per_second == pytest.approx(20.0), (
        "two active tasks, 10 rec/s each"
    )
    assert "warm-up 0_1" in render_report(report)


def test_advice_moves_a_hot_task_to_the_idle_instance_and_says_what_it_gains() -> None:
    # Instance "hot" holds both hot tasks (one per thread): 200 rec/s against 2.
    before, after = {0: 0, 1: 0, 2: 0, 3: 0}, {0: 500, 1: 500, 2: 5, 3: 5}
    report = build_report(poll(0, before, MEMBERS), poll(5, after, MEMBERS))
    advice = report.advice
    assert advice is not None
    # 101 rec/s each would take a second move (a 1 rec/s task): within the tolerance of
    # the best balance, the fewest moves win.
    assert (advice.before_instance_max, advice.after_instance_max) == (200.0, 102.0)
    (move,) = advice.moves
    assert (move.from_instance, move.to_instance) == ("hot", "cold")
    assert move.task in {"0_0", "0_1"}
    text = render_report(report)
    assert "REBALANCING ADVICE (by load, not task count: the best)" in text
    assert "busiest instance 200 rec/s -> 102 rec/s" in text
    assert "1 move:" in text


def test_no_advice_when_balancing_gains_little_or_rates_are_unknown() -> None:
    even = {0: 500, 1: 5, 2: 500, 3: 5}
    balanced = build_report(poll(0, dict.fromkeys(even, 0), MEMBERS), poll(5, even, MEMBERS))
    assert balanced.advice is None, "100 rec/s on each instance already"
    unknown = build_report(poll(0, {}, MEMBERS), poll(5, even, MEMBERS))
    assert unknown.advice is None, "no rates from a single sighting of the partitions"


def test_a_lag_in_seconds_that_is_only_a_lower_bound_says_at_least() -> None:
    """Issue 26 #1: a record older than anything datable is shown as a bound."""
    first, second = two_polls()
    bounded = tuple(
        replace(p, lag_seconds=7200.0, lag_seconds_lower_bound=True) if p.partition == 0 else p
        for p in second.partitions
    )

    text = render_report(build_report(first, replace(second, partitions=bounded)))

    assert "0_0: in-0 900 rec/s lag 10 (at least 7200.0 s)" in text
    assert "0_1: in-1 800 rec/s lag 10 (1.5 s)" in text
    assert ">=7200.0" in text
    assert ">= : at least that old" in text
