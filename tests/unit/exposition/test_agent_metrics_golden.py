"""The agent's metric names, labels and HELP texts are a contract: this golden
file freezes them. Regenerate it deliberately with KSMON_UPDATE_GOLDEN=1 and
update docs/metrics.md in the same change."""

import os
import platform
import re
from collections import Counter
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest

from agent import __version__
from agent.exposition.agent_metrics import AgentCollector
from agent.exposition.agent_state import AgentState
from agent.model import (
    SCHEMA_VERSION,
    AgentInfo,
    ClusterFacts,
    GroupInfo,
    MemberInfo,
    PartitionInfo,
    PollError,
    PollInfo,
    SidecarInfo,
    SidecarStateUpdater,
    SidecarTask,
    SidecarThread,
    Snapshot,
    StreamsMemberInfo,
    StreamsTask,
    TaskOffsetSum,
    TopicInfo,
    TopicPartitionRef,
)
from agent.model.poll_result import PollResult, SidecarReport
from agent.transport.sink import SinkStats

GOLDEN = Path(__file__).parent / "golden"
AGENT = AgentInfo("agent-1", __version__, "central")


def streams_snapshot() -> Snapshot:
    def member(thread: int, process: str, task: str, partition: int) -> MemberInfo:
        client = f"app-{process}-StreamThread-{thread}-consumer"
        return MemberInfo(
            member_id=f"{client}-m{thread}",
            client_id=client,
            client_host="/10.0.0.5",
            assigned_partitions=(TopicPartitionRef("in", partition),),
            subscription_bytes=100,
            assignment_bytes=200,
            streams=StreamsMemberInfo(
                process_id=process,
                thread_index=thread,
                base_client_id=f"app-{process}",
                endpoint="10.0.0.5:8080",
                active_tasks=(StreamsTask(task, (TopicPartitionRef("in", partition),)),),
                standby_tasks=(StreamsTask("1_0", ()),) if thread == 1 else (),
                task_offset_sums=(TaskOffsetSum(task, -2),),
                next_rebalance_ms=1_700_000_600_000 if thread == 1 else None,
            ),
        )

    return Snapshot(
        schema_version=SCHEMA_VERSION,
        cluster="prod",
        agent=AGENT,
        poll=PollInfo(1, 1_700_000_000.0, 0.5),
        group=GroupInfo(
            "app", "classic", "Stable", "consumer", "stream", 1, is_streams=True, generation=7
        ),
        members=(member(1, "p1", "0_0", 0), member(2, "p1", "0_1", 1)),
        partitions=(
            PartitionInfo("in", 0, 100, 0, 90, 10, 4.5, "app-p1-StreamThread-1-consumer-m1"),
            PartitionInfo("in", 1, 50, 0, 50, 0, 0.0, "app-p1-StreamThread-2-consumer-m2"),
        ),
        topics=(
            TopicInfo("in", 2, consumed=True),
            TopicInfo("app-counts-changelog", 2, internal_kind="changelog", size_bytes=4096),
        ),
        errors=(PollError("offset_fetch", "CoordinatorLoadInProgressError", "loading", True),),
        cluster_facts=ClusterFacts(offsets_topic_max_message_bytes=1048588),
    )


def plain_snapshot() -> Snapshot:
    return Snapshot(
        schema_version=SCHEMA_VERSION,
        cluster="prod",
        agent=AGENT,
        poll=PollInfo(1, 1_700_000_000.0, 0.5),
        group=GroupInfo("billing", "consumer", "Stable", "consumer", "uniform", 1, group_epoch=12),
        partitions=(PartitionInfo("invoices", 0, 10, 0, 7, 3, 12.0),),
        # The same cluster's limit again: still one series per cluster.
        cluster_facts=ClusterFacts(offsets_topic_max_message_bytes=1048588),
    )


def render(granularity: str) -> str:
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
            [streams_snapshot(), plain_snapshot()],
            requests=Counter({"ListGroups": 1, "OffsetFetch": 1}),
        )
    )
    state.record(PollResult("staging", 1, 1_700_000_000.0, 30.0, error="NoBrokersAvailable"))
    registry = CollectorRegistry()
    registry.register(
        AgentCollector(state, agent_id="agent-1", mode="central", lag_granularity=granularity)  # type: ignore[arg-type]
    )
    text = generate_latest(registry).decode()
    # Versions change with every release and Python; the contract is the rest.
    text = text.replace(f'version="{__version__}"', 'version="VERSION"')
    return re.sub(
        rf'python_version="{re.escape(platform.python_version())}"', 'python_version="PY"', text
    )


SIDECAR_PROCESS = "5118960c-55bf-46ff-b9f2-ad95ee6584c5"


def sidecar_info() -> SidecarInfo:
    """An instance with one thread running and one dead, restoring one task."""
    thread = f"app-{SIDECAR_PROCESS}-StreamThread"
    return SidecarInfo(
        process_id=SIDECAR_PROCESS,
        app_metrics_url="http://127.0.0.1:9404/metrics",
        app_metrics_up=True,
        client_state="RUNNING",
        alive_stream_threads=1,
        failed_stream_threads=1.0,
        expected_stream_threads=2,
        threads=(
            SidecarThread(f"{thread}-1", 1, "RUNNING", 3.0, 0.0, 12.0),
            SidecarThread(f"{thread}-2", 2, "DEAD"),
            SidecarThread(f"{thread}-3", 3, None),  # state unknown: no series
        ),
        tasks=(
            SidecarTask("1_0", f"{thread}-1", restore_remaining_records=1200),
            SidecarTask("0_0", f"{thread}-1", restore_remaining_records=0),
            SidecarTask("1_1", f"{thread}-1", restore_remaining_records=None),
        ),
        state_updaters=(
            SidecarStateUpdater(f"app-{SIDECAR_PROCESS}-StateUpdater-1", 1, 0, 0, 0.0),
        ),
        state_dir="/var/lib/kafka-streams/app",
        state_dir_readable=True,
        state_dir_bytes=123456,
        state_volume_size_bytes=10737418240,
        state_volume_available_bytes=4294967296,
    )


def render_sidecar(info: SidecarInfo) -> str:
    state = AgentState(["prod"], sink_stats=lambda: [SinkStats("kafka", 10, 0, 0, 0)])
    snapshot = Snapshot(
        schema_version=SCHEMA_VERSION,
        cluster="prod",
        agent=AgentInfo("app-0", __version__, "sidecar", pod="app-0"),
        poll=PollInfo(1, 1_700_000_000.0, 0.2),
        group=GroupInfo("app", "classic", "Stable", "consumer", "stream", 1, is_streams=True),
        sidecar=info,
    )
    state.record(
        PollResult(
            "prod",
            1,
            1_700_000_000.0,
            0.2,
            [snapshot],
            requests=Counter({"DescribeGroups": 1}),
            sidecar=SidecarReport("app", info),
        )
    )
    registry = CollectorRegistry()
    registry.register(AgentCollector(state, agent_id="app-0", mode="sidecar"))
    text = generate_latest(registry).decode()
    text = text.replace(f'version="{__version__}"', 'version="VERSION"')
    return re.sub(
        rf'python_version="{re.escape(platform.python_version())}"', 'python_version="PY"', text
    )


def check(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("KSMON_UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text(), (
        f"metrics changed; see {path} (KSMON_UPDATE_GOLDEN=1 to accept)"
    )


def test_agent_metrics_at_partition_granularity_match_the_golden_file() -> None:
    check("agent_metrics_partition.txt", render("partition"))


def test_agent_metrics_at_topic_granularity_match_the_golden_file() -> None:
    check("agent_metrics_topic.txt", render("topic"))


def test_every_metric_has_help_and_the_ksmon_prefix() -> None:
    text = render("partition")
    names = set(re.findall(r"^# TYPE (\S+) ", text, flags=re.MULTILINE))
    helped = set(re.findall(r"^# HELP (\S+) \S", text, flags=re.MULTILINE))
    assert names, "no metrics rendered"
    assert names == helped
    assert all(n.startswith("ksmon_") for n in names)


def test_member_ids_appear_only_on_assignment_info_series() -> None:
    for line in render("partition").splitlines():
        if "member_id=" in line and not line.startswith("#"):
            assert line.split("{")[0].endswith("_assignment_info"), line


def test_a_sidecar_agent_adds_its_app_metrics_matching_the_golden_file() -> None:
    check("agent_metrics_sidecar.txt", render_sidecar(sidecar_info()))


def test_a_central_agent_has_no_sidecar_metrics() -> None:
    assert "ksmon_sidecar_" not in render("partition")


def test_an_app_whose_endpoint_is_down_exposes_up_0_and_nothing_it_cannot_know() -> None:
    down = SidecarInfo(
        process_id=SIDECAR_PROCESS,
        app_metrics_url="http://127.0.0.1:9404/metrics",
        app_metrics_error="cannot reach http://127.0.0.1:9404/metrics: Connection refused",
        expected_stream_threads=2,
    )

    samples = [
        line for line in render_sidecar(down).splitlines() if line.startswith("ksmon_sidecar_")
    ]

    labels = f'{{group="app",kafka_cluster="prod",process="{SIDECAR_PROCESS}"}}'
    assert samples == [
        f"ksmon_sidecar_app_metrics_up{labels} 0.0",
        f"ksmon_sidecar_stream_threads_expected{labels} 2.0",
    ]


def test_a_client_closed_to_error_is_exposed_as_error_for_an_alert_to_see() -> None:
    closed = SidecarInfo(
        process_id=SIDECAR_PROCESS,
        app_metrics_url="http://127.0.0.1:9404/metrics",
        app_metrics_up=True,
        client_state="ERROR",
        alive_stream_threads=0,
        client_closed=True,
    )

    samples = [
        line
        for line in render_sidecar(closed).splitlines()
        if line.startswith("ksmon_sidecar_client_state")
    ]

    labels = f'group="app",kafka_cluster="prod",process="{SIDECAR_PROCESS}"'
    assert samples == [f'ksmon_sidecar_client_state{{{labels},state="ERROR"}} 1.0']
