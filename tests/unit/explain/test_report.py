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
    TaskOffsetSum,
    TopicInfo,
    TopicPartitionRef,
)
from agent.model.records import to_json_bytes

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
