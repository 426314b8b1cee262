"""``ksmon explain`` in the middle of trouble (issue 27 #4): a Kafka Streams app that
loops is Empty at most instants, with neither members nor commits to show; its
generations are in __consumer_offsets. Reports built from hand-made polls and
histories, table-driven."""

import json
from dataclasses import replace

import pytest

from agent.explain.history import GenerationSeen, GroupHistory
from agent.explain.render import render_report
from agent.explain.report import (
    NO_COMMIT_IDLE,
    NO_COMMIT_WHILE_RECORDS_ARRIVE,
    FindingLine,
    GroupReport,
    build_report,
)
from agent.model import (
    SCHEMA_VERSION,
    AgentInfo,
    GroupInfo,
    MemberInfo,
    PartitionInfo,
    PollInfo,
    RebalanceEvent,
    Snapshot,
    StreamsMemberInfo,
    StreamsTask,
    TopicPartitionRef,
)
from agent.model.records import to_json_bytes

GROUP = "loops-app"
T0 = 1_795_619_000.0  # the first generation of the loop
PROCESS = "87522535-c9f7-4b70-859d-7055700113d7"


def thread(n: int, partitions: tuple[int, ...] = (0,)) -> MemberInfo:
    client = f"{GROUP}-{PROCESS}-StreamThread-{n}-consumer"
    return MemberInfo(
        member_id=f"{client}-{n}",
        client_id=client,
        client_host="/10.0.0.1",
        assigned_partitions=tuple(TopicPartitionRef("in", p) for p in partitions),
        streams=StreamsMemberInfo(
            process_id=PROCESS,
            thread_index=n,
            active_tasks=tuple(
                StreamsTask(f"0_{p}", (TopicPartitionRef("in", p),)) for p in partitions
            ),
        ),
    )


def poll(
    at: float,
    state: str,
    members: tuple[MemberInfo, ...] = (),
    *,
    is_streams: bool = False,
    partitions: tuple[PartitionInfo, ...] = (),
    rebalances: tuple[RebalanceEvent, ...] = (),
) -> Snapshot:
    """A poll as the agent makes it: an Empty group that never committed is not known
    to be Kafka Streams (no member's data, no Streams commit metadata)."""
    return Snapshot(
        schema_version=SCHEMA_VERSION,
        cluster="prod",
        agent=AgentInfo("a", "0", "central"),
        poll=PollInfo(1, at, 0.1),
        group=GroupInfo(
            GROUP,
            "classic",
            state,
            "consumer",
            "stream" if members else None,
            1,
            is_streams=is_streams,
        ),
        members=members,
        partitions=partitions,
        rebalances=rebalances,
    )


def loop_history(generations: int = 13, every: float = 35.0) -> GroupHistory:
    """A stream thread that overruns max.poll.interval.ms: it joins (a generation with
    one member), is kicked out (a generation with none), joins again..."""
    seen = tuple(
        GenerationSeen(
            generation=83 + i,
            at=T0 + every * i,
            protocol="stream" if joined else None,
            members=1 if joined else 0,
            streams_processes=(PROCESS,) if joined else (),
            stream_threads=1 if joined else 0,
        )
        for i in range(generations)
        for joined in [i % 2 == 1]
    )
    return GroupHistory(seen, since=T0 - 60, until=T0 + 900 - 60, partition=17)


LOOP_END = T0 + 35.0 * 12  # the 13th generation, Empty
EMPTY_SAMPLE = (poll(LOOP_END + 5, "Empty"), poll(LOOP_END + 10, "Empty"))
LOOP_FINDING = FindingLine(
    "rebalance_loop",
    "warning",
    "the group",
    T0 + 200,
    "12 rebalances in 10 min; likely cause: max.poll.interval.ms",
    '{"events_from":"exact"}',
    stream_thread_client=f"{GROUP}-{PROCESS}-StreamThread-1-consumer",
)


def report_of(
    sample: tuple[Snapshot, Snapshot],
    history: GroupHistory | None,
    findings: tuple[FindingLine, ...] | None = None,
) -> GroupReport:
    return build_report(*sample, findings, "the job", history=history)


@pytest.mark.parametrize(
    ("history", "findings", "condition", "evidence"),
    [
        pytest.param(
            loop_history(),
            None,
            "Kafka Streams app, rebalancing repeatedly: 13 generations in 7 min; "
            "no members at this instant",
            "its members at generation 94 were Kafka Streams stream threads",
            id="history-alone",
        ),
        pytest.param(
            loop_history(),
            (LOOP_FINDING,),
            "Kafka Streams app, in a rebalance loop (the aggregation job's rebalance_loop "
            "finding): 13 generations in 7 min; no members at this instant",
            "its members at generation 94 were Kafka Streams stream threads",
            id="history-and-the-jobs-finding",
        ),
        pytest.param(
            GroupHistory.unknown("unknown: cannot read __consumer_offsets partition 17"),
            (LOOP_FINDING,),
            "Kafka Streams app, in a rebalance loop (the aggregation job's rebalance_loop "
            "finding); no members at this instant",
            "the aggregation job's open rebalance_loop finding names its stream thread "
            f"{GROUP}-{PROCESS}-StreamThread-1-consumer",
            id="the-jobs-finding-alone",
        ),
        pytest.param(
            None,
            (FindingLine("stream_threads_dead", "info", "instance x", T0, "gone"),),
            "Kafka Streams app, not running; no members at this instant",
            "the aggregation job's open stream_threads_dead finding (Kafka Streams apps only)",
            id="a-streams-only-finding",
        ),
    ],
)
def test_an_empty_looping_app_is_named_a_kafka_streams_app_in_its_condition(
    history: GroupHistory | None,
    findings: tuple[FindingLine, ...] | None,
    condition: str,
    evidence: str,
) -> None:
    report = report_of(EMPTY_SAMPLE, history, findings)

    assert report.is_streams
    assert report.condition == condition
    assert report.streams_evidence is not None
    assert report.streams_evidence.startswith(evidence)
    text = render_report(report)
    assert text.startswith(f"{GROUP} on cluster prod: Kafka Streams application, Empty"), (
        "not 'classic group, Empty, 0 members'"
    )
    assert text.splitlines()[1] == condition, "the condition comes right under the headline"
    if findings:
        assert text.index("FINDINGS (the job)") < text.index("RECENT REBALANCES")


def test_the_loop_s_generations_are_the_json_s_generation_and_rebalances() -> None:
    report = report_of(EMPTY_SAMPLE, loop_history())

    plain = json.loads(to_json_bytes(report))

    assert plain["generation"] == 95
    assert [r["generation"] for r in plain["rebalances"]] == list(range(83, 96))
    assert plain["rebalances"][1] == {
        "generation": 84,
        "at": T0 + 35.0,
        "member_count": 1,
        "protocol": "stream",
        "instances": 1,
        "during_sample": False,
    }
    assert plain["rebalances_note"] == (
        "the generations stored in the last 15 min, from __consumer_offsets partition 17"
    )
    assert plain["last_members"] == {
        "generation": 94,
        "at": T0 + 35.0 * 11,
        "members": 1,
        "instances": 1,
        "source": "__consumer_offsets, the generation's record",
    }


def test_the_text_has_a_recent_rebalances_section_before_the_instances_in_trouble() -> None:
    text = render_report(report_of(EMPTY_SAMPLE, loop_history()))

    assert ", generation 95, no members at this instant," in text.splitlines()[0]
    assert "Last members: 1 member of 1 instance at generation 94, 2026-11-25 15:09:45Z" in text
    assert (
        "RECENT REBALANCES (the generations stored in the last 15 min, "
        "from __consumer_offsets partition 17)"
    ) in text
    assert (
        "  generation 84 at 2026-11-25 15:03:55Z, 1 member of 1 instance, assignor stream" in text
    )
    assert "  generation 95 at 2026-11-25 15:10:20Z, 0 members (Empty)" in text
    assert "PARTITIONS: none known: the group has committed no offsets" in text


def test_only_the_newest_rebalances_are_printed_all_are_in_the_json() -> None:
    report = report_of(EMPTY_SAMPLE, loop_history(generations=30, every=10.0))

    text = render_report(report)

    assert len(report.rebalances) == 30
    assert "  ... 10 earlier generations (--json lists them)" in text
    assert "generation 92 at" not in text
    assert "generation 93 at" in text


STABLE_MEMBERS = (thread(1, (0, 1)),)
IN = tuple(PartitionInfo("in", p, 100, 0, 100, 0, 0.0) for p in (0, 1))
STABLE = (
    poll(T0, "Stable", STABLE_MEMBERS, is_streams=True, partitions=IN),
    poll(T0 + 5, "Stable", STABLE_MEMBERS, is_streams=True, partitions=IN),
)
FORMED = GroupHistory(
    (GenerationSeen(1, T0 - 300, "stream", 1, (PROCESS,), 1),),
    since=T0 - 900,
    until=T0 + 5,
    partition=3,
)


@pytest.mark.parametrize(
    ("sample", "history", "generation", "note"),
    [
        pytest.param(
            STABLE,
            FORMED,
            1,
            "the generations stored in the last 15 min, from __consumer_offsets partition 3",
            id="read",
        ),
        pytest.param(
            STABLE,
            replace(FORMED, generations=()),
            None,
            "none stored in the last 15 min: __consumer_offsets partition 3 holds no record "
            "of the group since; the generation is stored only when it changes, so it is "
            "unknown",
            id="quiet-for-longer-than-the-look-back",
        ),
        pytest.param(
            STABLE,
            replace(FORMED, complete=False),
            None,
            "the generations stored in the last 15 min, from __consumer_offsets partition 3; "
            "the read stopped at its time budget before the partition's end: later "
            "generations are missing and the generation is unknown",
            id="budget-ran-out",
        ),
        pytest.param(
            STABLE,
            GroupHistory.unknown(
                "unknown: cannot read __consumer_offsets partition 3 "
                "(TopicAuthorizationFailedError), where the coordinator keeps the group's "
                "generations"
            ),
            None,
            "unknown: cannot read __consumer_offsets partition 3 "
            "(TopicAuthorizationFailedError), where the coordinator keeps the group's "
            "generations",
            id="no-read-permission",
        ),
        pytest.param(
            STABLE,
            None,
            None,
            "unknown: __consumer_offsets, where the coordinator stores them, was not read",
            id="not-read",
        ),
        pytest.param(
            tuple(
                replace(
                    p,
                    rebalances=(RebalanceEvent(6, T0 - 1, member_count=1),),
                    group=replace(p.group, generation=6),
                )
                for p in STABLE
            ),
            None,
            6,
            "from the agent's __consumer_offsets reader",
            id="an-agent-tail-s-snapshots",
        ),
    ],
)
def test_generation_and_rebalances_are_never_left_empty_without_a_word(
    sample: tuple[Snapshot, Snapshot],
    history: GroupHistory | None,
    generation: int | None,
    note: str,
) -> None:
    report = report_of(sample, history)

    assert report.generation == generation
    assert report.rebalances_note == note
    text = render_report(report)
    assert "RECENT REBALANCES" in text
    assert note in text


def test_a_healthy_group_has_no_condition_line_and_its_rebalances_come_last() -> None:
    report = report_of(STABLE, FORMED)

    assert report.condition is None
    assert report.streams_evidence is None, "the poll itself shows a Kafka Streams app"
    text = render_report(report)
    assert text.splitlines()[1] == ""
    assert text.index("INSTANCES") < text.index("RECENT REBALANCES")


def test_a_stable_group_that_churned_says_so_without_calling_it_a_loop() -> None:
    """A loop is Stable between its rebalances too: the facts, and the job's verdict
    only when its finding is open."""
    report = report_of(STABLE, replace(loop_history(5), until=T0 + 5))

    assert report.condition == (
        "Kafka Streams app, rebalanced often: 5 generations in 2 min; "
        "Stable at this instant, 1 member"
    )


def test_a_plain_consumer_group_that_emptied_is_not_called_kafka_streams() -> None:
    plain = GroupHistory(
        (GenerationSeen(4, T0, "range", 2), GenerationSeen(5, T0 + 30, None, 0)),
        since=T0 - 600,
        until=T0 + 300,
        partition=9,
    )

    report = report_of(EMPTY_SAMPLE, plain)

    assert not report.is_streams
    assert (
        report.condition
        == "consumer group, not running: 2 generations in 30 s; no members at this instant"
    )
    assert report.last_members is not None
    assert (report.last_members.generation, report.last_members.members) == (4, 2)


def test_what_changed_during_the_sample_is_said() -> None:
    sample = (
        poll(T0, "Stable", STABLE_MEMBERS, is_streams=True, partitions=IN),
        poll(T0 + 5, "Empty", partitions=IN),
    )
    history = replace(FORMED, generations=(*FORMED.generations, GenerationSeen(2, T0 + 3, None, 0)))

    report = report_of(sample, history)

    assert report.sample_changes == ("state Stable -> Empty", "member ids: 1 left, 0 joined")
    assert report.rebalances[-1].during_sample
    assert report.streams_evidence == (
        "the sample's first poll saw it as one (Kafka Streams members or commits)"
    )
    text = render_report(report)
    assert "(Empty) (during the sample)" in text
    assert "during the sample: state Stable -> Empty; member ids: 1 left, 0 joined" in text


def lagging(committed: int | None, start: int, end_before: int, end_after: int) -> Snapshot:
    """The second poll of ``in-0``, held by one thread; the first saw ``end_before``."""
    lag = max(0, end_after - committed) if committed is not None else None
    return poll(
        T0 + 5,
        "Stable",
        (thread(1),),
        is_streams=True,
        partitions=(PartitionInfo("in", 0, end_after, start, committed, lag),),
    )


@pytest.mark.parametrize(
    ("committed", "start", "end_before", "end_after", "task_text", "lag_cell", "footnote"),
    [
        pytest.param(50, 0, 50, 50, "in-0 0.0 rec/s lag 0", "0", None, id="caught-up"),
        pytest.param(
            None, 0, 0, 0, "in-0 0.0 rec/s lag 0", "0", None, id="never-written-no-commit"
        ),
        pytest.param(None, 70, 70, 70, "in-0 0.0 rec/s lag 0", "0", None, id="all-records-expired"),
        pytest.param(
            None,
            0,
            40,
            40,
            "in-0 0.0 rec/s idle",
            "idle",
            f"idle : {NO_COMMIT_IDLE} (in-0)",
            id="no-traffic-no-commit",
        ),
        pytest.param(
            None,
            0,
            40,
            90,
            "in-0 10.0 rec/s lag ?",
            "?",
            f"? : {NO_COMMIT_WHILE_RECORDS_ARRIVE} (in-0)",
            id="traffic-but-never-committed",
        ),
    ],
)
def test_idle_partitions_show_0_or_idle_and_a_question_mark_says_why(
    committed: int | None,
    start: int,
    end_before: int,
    end_after: int,
    task_text: str,
    lag_cell: str,
    footnote: str | None,
) -> None:
    second = lagging(committed, start, end_before, end_after)
    first = replace(
        second,
        poll=PollInfo(1, T0, 0.1),
        partitions=(replace(second.partitions[0], log_end_offset=end_before),),
    )

    report = build_report(first, second)
    text = render_report(report)

    assert f"0_0: {task_text}" in text
    (row,) = [line for line in text.splitlines() if line.startswith("  in  ")]
    assert row.split()[6] == lag_cell, row
    if footnote is None:
        assert " : " not in text.split("INSTANCES")[1].split("RECENT")[0]
    else:
        assert text.count(footnote) == 1, "once, under the first section that shows it"
