"""Assembling the snapshot's sidecar section from a scrape, a state directory and the group."""

from collections.abc import Callable
from pathlib import Path

import pytest

from agent.collect.app_scrape import Scrape
from agent.collect.sidecar import SidecarCollector, SidecarSettings
from agent.collect.state_dir_reader import StateDirReading, TaskDirReading, read_state_dir
from agent.config.schema import SidecarConfig
from agent.model import (
    AgentInfo,
    CheckpointOffset,
    MemberInfo,
    StateDirStore,
    StateDirTask,
    StreamsMemberInfo,
)
from agent.runner import _sidecar_collector
from agent.streams.checkpoint import ChangelogOffset, CheckpointFile
from agent.streams.codec import DecodeError

CAPTURES = Path(__file__).resolve().parents[2] / "data" / "jmx-exporter"
PID = "5118960c-55bf-46ff-b9f2-ad95ee6584c5"
APP = "dumpapp"
CLIENT = f"{APP}-{PID}"
URL = "http://127.0.0.1:9404/metrics"


def capture(name: str) -> str:
    return (CAPTURES / name).read_text()


def member(n: int, process: str, host: str = "/10.0.0.5") -> MemberInfo:
    client = f"{APP}-{process}-StreamThread-{n}-consumer"
    return MemberInfo(
        member_id=f"{client}-{n}",
        client_id=client,
        client_host=host,
        streams=StreamsMemberInfo(process_id=process, thread_index=n),
    )


GROUP = (member(1, PID), member(2, PID), member(1, "other-process", "/10.0.0.6"))


def collector(
    *texts: str | None,
    state_dir: Callable[[Path, str], StateDirReading] | None = None,
    expected: int | None = 2,
) -> SidecarCollector:
    """A collector whose scrapes return ``texts`` in turn (None: the endpoint is down)."""
    pending = list(texts)

    def scraper(url: str, timeout: float, keep: Callable[[bytes], bool]) -> Scrape:
        text = pending.pop(0)
        if text is None:
            return Scrape(error=f"cannot reach {url}: Connection refused")
        return Scrape(text="".join(line for line in text.splitlines(True) if keep(line.encode())))

    settings = SidecarSettings(
        APP,
        URL,
        state_dir=Path("/state") if state_dir else None,
        expected_stream_threads=expected,
        pod_ip="10.0.0.5",
    )
    if state_dir is None:
        return SidecarCollector(settings, scraper=scraper)
    return SidecarCollector(settings, scraper=scraper, state_dir_reader=state_dir)


def test_a_running_app_matched_to_its_members_by_process_id() -> None:
    c = collector(capture("streams-4.3.1-running.txt"))

    info = c.report(c.observe(), GROUP)

    assert info.app_metrics_up
    assert (info.client_state, info.alive_stream_threads, info.expected_stream_threads) == (
        "RUNNING",
        2,
        2,
    )
    assert info.process_id == PID
    assert (info.member_ids, info.matched_by) == (
        (GROUP[0].member_id, GROUP[1].member_id),
        "process_id",
    )
    assert [(t.thread_index, t.state, t.rebalance_total) for t in info.threads] == [
        (1, "RUNNING", 1.0),
        (2, "RUNNING", 1.0),
    ]
    assert len(info.tasks) == 8
    assert all(t.restored_records_total is None for t in info.tasks), (
        "restore-total is a DEBUG sensor: at INFO its 0 means nothing"
    )
    assert len(info.state_updaters) == 2
    assert info.recording_level == "INFO"
    assert (info.state_dir, info.state_dir_readable) == (None, False)


def test_restored_records_are_reported_at_debug_recording_level() -> None:
    labels = f'{{client_id="{CLIENT}",process_id="{PID}"}}'
    level = f"kafka_streams_stream_metrics_recording_level{labels}"
    text = capture("streams-4.3.1-running.txt").replace(f"{level} 0.0", f"{level} 1.0")
    c = collector(text)

    info = c.report(c.observe(), GROUP)

    assert info.recording_level == "DEBUG"
    assert [t.restored_records_total for t in info.tasks] == [0.0] * 8


def test_an_app_whose_endpoint_is_down_still_gets_a_section_with_the_reason() -> None:
    c = collector(None)

    info = c.report(c.observe(), GROUP)

    assert not info.app_metrics_up
    assert info.app_metrics_error == f"cannot reach {URL}: Connection refused"
    assert info.alive_stream_threads is None, "unknown, never zero"
    assert info.expected_stream_threads == 2
    assert (info.matched_by, info.process_id) == ("host", PID), "the pod IP still finds them"


def test_a_client_closed_by_shutdown_client_has_no_alive_thread() -> None:
    running = capture("streams-4.3.1-running.txt")
    # Both captures must look like one JVM, as in the integration test that does it for real.
    jvm = next(line for line in running.splitlines() if line.startswith("process_start_time"))
    dead = "\n".join(
        jvm if line.startswith("process_start_time") else line
        for line in capture("streams-4.3.1-shutdown-client.txt").splitlines()
    )
    c = collector(running, dead)
    c.observe()

    info = c.report(c.observe(), GROUP)

    assert info.app_metrics_up
    assert (info.client_closed, info.alive_stream_threads, info.expected_stream_threads) == (
        True,
        0,
        2,
    )
    assert info.client_state == "ERROR", "its metrics vanished while the JVM served on"
    assert [t.state for t in info.threads] == ["DEAD", "DEAD"]
    assert info.process_id == PID
    assert info.matched_by == "process_id", "the remembered process id still matches"


def with_client_state(text: str, ordinal: int) -> str:
    """The capture with its client-state (the KafkaStreams.State ordinal) replaced."""
    line = next(x for x in text.splitlines() if x.startswith("kafka_streams_stream_metrics_client"))
    return text.replace(line, line.rsplit(" ", 1)[0] + f" {ordinal}.0")


@pytest.mark.parametrize(
    ("last_ordinal", "states"),
    [
        pytest.param(
            5,
            ["RUNNING", "PENDING_ERROR", "ERROR"],
            id="SHUTDOWN_CLIENT caught in PENDING_ERROR: the metrics vanish before ERROR",
        ),
        pytest.param(
            3,
            ["RUNNING", "PENDING_SHUTDOWN", "NOT_RUNNING"],
            id="close() caught in PENDING_SHUTDOWN: a clean close, not an error",
        ),
    ],
)
def test_the_section_carries_the_way_the_client_closed(
    last_ordinal: int, states: list[str]
) -> None:
    running = capture("streams-4.3.1-running.txt")
    jvm = next(line for line in running.splitlines() if line.startswith("process_start_time"))
    dead = "\n".join(
        jvm if line.startswith("process_start_time") else line
        for line in capture("streams-4.3.1-shutdown-client.txt").splitlines()
    )
    c = collector(running, with_client_state(running, last_ordinal), dead)

    reports = [c.report(c.observe(), GROUP) for _ in states]

    assert [r.client_state for r in reports] == states
    assert [r.client_closed for r in reports] == [False, False, True]


def reading(tmp_path: Path) -> StateDirReading:
    return StateDirReading(
        directory=tmp_path / APP,
        readable=True,
        process_id=PID,
        tasks=(
            TaskDirReading("0_0", None, 0),
            TaskDirReading(
                "1_0",
                CheckpointFile((ChangelogOffset(f"{APP}-counts-changelog", 0, 426),)),
                4096,
                ("counts",),
            ),
            TaskDirReading("1_1", DecodeError(".checkpoint", "expected 2 entries, found 1"), 10),
            TaskDirReading(
                "1_2", CheckpointFile((), unknown=((f"{APP}-legacy-changelog", 2),)), 10
            ),
        ),
        total_bytes=5000,
    )


def test_state_directory_tasks_and_checkpoints(tmp_path: Path) -> None:
    c = collector(None, state_dir=lambda _path, _app: reading(tmp_path))

    info = c.report(c.observe(), GROUP)

    assert info.state_dir_readable
    assert info.state_dir_bytes == 5000
    assert info.process_id == PID, "from kafka-streams-process-metadata while metrics are down"
    assert info.matched_by == "process_id"
    assert info.state_dir_tasks == (
        StateDirTask("0_0", has_checkpoint=False, size_bytes=0),
        StateDirTask(
            "1_0",
            has_checkpoint=True,
            checkpoint=(CheckpointOffset(f"{APP}-counts-changelog", 0, 426),),
            size_bytes=4096,
        ),
        StateDirTask(
            "1_1",
            has_checkpoint=True,
            size_bytes=10,
            error=".checkpoint: expected 2 entries, found 1",
        ),
        StateDirTask("1_2", has_checkpoint=True, size_bytes=10),
    )


def test_changelog_topics_come_from_store_names_and_checkpoints(tmp_path: Path) -> None:
    c = collector(
        capture("streams-4.3.1-running.txt"), state_dir=lambda _path, _app: reading(tmp_path)
    )

    topics = c.changelog_topics(c.observe())

    assert topics == {f"{APP}-counts-changelog", f"{APP}-legacy-changelog"}


def test_a_state_directory_that_is_not_mounted(tmp_path: Path) -> None:
    c = collector(None, state_dir=lambda _path, app: read_state_dir(tmp_path / "absent", app))

    info = c.report(c.observe(), ())

    assert not info.state_dir_readable
    assert info.state_dir_error is not None
    assert info.member_ids == ()


@pytest.mark.parametrize("expected", [None, 3])
def test_expected_threads_are_the_configured_ones(expected: int | None) -> None:
    c = collector(capture("streams-3.9.1-running.txt"), expected=expected)

    info = c.report(c.observe(), ())

    assert info.expected_stream_threads == expected
    assert info.alive_stream_threads == 2
    assert info.client_state is None, "3.x has no client-state metric"
    assert [t.thread_index for t in info.threads] == [1, 2], "threads found via their consumers"


def test_the_app_memory_limit_and_store_layouts_go_into_the_section(tmp_path: Path) -> None:
    """The limit comes from the app's cgroup file (read at every poll), the stores from
    the state directory's layout."""
    limit_file = tmp_path / "memory.max"
    limit_file.write_text("536870912\n")
    app = tmp_path / "state" / APP
    (app / "1_0" / "rocksdb" / "counts").mkdir(parents=True)
    (app / "1_1" / "windowed" / "windowed.1700000040000").mkdir(parents=True)
    (app / "1_1" / "windowed" / "windowed.1700000100000").mkdir(parents=True)
    settings = SidecarSettings(
        APP, URL, state_dir=tmp_path / "state", app_memory_limit_file=limit_file
    )
    c = SidecarCollector(settings, scraper=lambda url, _t, _k: Scrape(error="down"))

    info = c.report(c.observe(), ())

    assert (info.memory_limit_bytes, info.memory_limit_source) == (536870912, f"file {limit_file}")
    assert info.memory_limit_error is None
    assert [(t.task, t.stores) for t in info.state_dir_tasks] == [
        ("1_0", (StateDirStore("counts", "key_value", 0, 0),)),
        ("1_1", (StateDirStore("windowed", "segmented", 2, 0),)),
    ]
    limit_file.write_text("max\n")
    unlimited = c.report(c.observe(), ())
    assert unlimited.memory_limit_bytes is None
    assert unlimited.memory_limit_source == f"file {limit_file} (unlimited)"


def test_a_configured_limit_wins_and_none_is_unknown() -> None:
    fixed = SidecarCollector(
        SidecarSettings(APP, URL, app_memory_limit=2**30, app_memory_limit_source="configuration"),
        scraper=lambda url, _t, _k: Scrape(error="down"),
    )
    info = fixed.report(fixed.observe(), ())
    assert (info.memory_limit_bytes, info.memory_limit_source) == (2**30, "configuration")
    unknown = SidecarCollector(
        SidecarSettings(APP, URL), scraper=lambda url, _t, _k: Scrape(error="down")
    )
    assert unknown.report(unknown.observe(), ()).memory_limit_bytes is None


@pytest.mark.parametrize(
    ("limit", "fixed", "source", "file"),
    [
        (2**30, 2**30, "configuration", None),
        (Path("/sys/fs/cgroup/app/memory.max"), None, None, Path("/sys/fs/cgroup/app/memory.max")),
        (None, None, None, None),
    ],
)
def test_the_runner_passes_the_configured_limit_to_the_collector(
    limit: int | Path | None, fixed: int | None, source: str | None, file: Path | None
) -> None:
    config = SidecarConfig(application_id=APP, cluster="local", app_memory_limit=limit)
    settings = _sidecar_collector(config, AgentInfo("a", "0", "sidecar")).settings
    assert (settings.app_memory_limit, settings.app_memory_limit_source) == (fixed, source)
    assert settings.app_memory_limit_file == file


# -- what a page lacks, said once ----------------------------------------------------


MICROMETER_PAGE = (CAPTURES.parent / "micrometer" / "streams-4.3.1-running.txt").read_text()
WITHOUT_REBALANCES = "".join(
    line
    for line in MICROMETER_PAGE.splitlines(True)
    if not line.startswith("kafka_consumer_coordinator_rebalance")
)


def test_the_fields_a_page_lacks_are_logged_once_and_again_only_when_that_changes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    pages = [WITHOUT_REBALANCES, WITHOUT_REBALANCES, MICROMETER_PAGE, WITHOUT_REBALANCES]
    sidecar = collector(*pages)

    with caplog.at_level("INFO", logger="agent.collect.sidecar"):
        for _ in pages:
            sidecar.observe()

    lines = [r.getMessage() for r in caplog.records]
    assert lines == [
        f"{URL} (micrometer naming) has no rebalance_total: left unknown",
        f"{URL} (micrometer naming) has no rebalance_total: left unknown",
    ], "once, not again while it lasts; a complete page says nothing; the gap again"
