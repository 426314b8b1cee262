"""The state volume, live: the real fixture app writes its state onto a small tmpfs made
for the test while the real sidecar (``ksmon agent`` in sidecar mode) reports it. The
volume's size and free bytes on /metrics follow what ``statvfs`` says at the same moment,
and a real Prometheus, loading the rules rendered with short test values, sees
KafkaStreamsStateVolumeFillingUp and KafkaStreamsStateVolumeNearlyFull fire on the real
series before the volume is full."""

import os
import secrets
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.embedded.kafka import EmbeddedKafka
from agent.embedded.load import produce
from agent.embedded.ports import LOOPBACK
from agent.embedded.process import wait_until
from agent.embedded.streams_app import StreamsAppBuild, StreamsAppConfig, StreamsAppInstance
from agent.embedded.topics import create_topics
from dashboards.alert_rules import load_values, render_rule_files
from tests.support.environment import unavailable
from tests.support.prometheus import PrometheusServer
from tests.support.sidecar_agent import Samples, SidecarAgent
from tests.support.streams import unique_name

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

VOLUME_MIB = 32
# The alerts with test-sized settings: a trend over 20 s that reaches zero within
# 10 minutes, and less than 60 % free.
TEST_VALUES = """\
rules:
  KafkaStreamsStateVolumeFillingUp:
    window: 20s
    horizonSeconds: 600
    for: 3s
  KafkaStreamsStateVolumeNearlyFull:
    thresholdPercent: 60
    for: 3s
"""
NEARLY_FULL_FREE = 0.60
# Distinct 1 KiB keys of random text: the count store holds each one, uncompressible.
KEY_BYTES = 1024
BATCH_KEYS = 1500
# RocksDB may flush or compact between the sidecar's poll and the test's statvfs.
TOLERANCE = 1 << 20
FILLING_UP = "KafkaStreamsStateVolumeFillingUp"
NEARLY_FULL = "KafkaStreamsStateVolumeNearlyFull"


@pytest.fixture
def small_volume(tmp_path: Path) -> Iterator[Path]:
    """A tmpfs of VOLUME_MIB mounted for the test, unmounted after it."""
    mount_point = tmp_path / "instance" / "state"
    mount_point.mkdir(parents=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={VOLUME_MIB}m,mode=0755", "tmpfs", str(mount_point)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        unavailable("a tmpfs for the state directory", mounted.stderr.strip() or "mount failed")
    try:
        yield mount_point
    finally:
        if subprocess.run(["umount", str(mount_point)], check=False).returncode != 0:
            subprocess.run(["umount", "--lazy", str(mount_point)], check=True)


def _volume(samples: Samples, name: str) -> float | None:
    values = [v for _, v in samples.get(f"ksmon_sidecar_state_volume_{name}_bytes", [])]
    return values[0] if len(values) == 1 else None


def _truth(path: Path) -> tuple[int, int]:
    stats = os.statvfs(path)
    return stats.f_blocks * stats.f_frsize, stats.f_bavail * stats.f_frsize


def _agrees_with_statvfs(samples: Samples, path: Path) -> bool:
    size, free = _truth(path)
    reported = _volume(samples, "available")
    return (
        reported is not None
        and abs(reported - free) <= TOLERANCE
        and _volume(samples, "size") == size
    )


def _state_dir_bytes(samples: Samples) -> float:
    (value,) = [v for _, v in samples["ksmon_sidecar_state_dir_bytes"]]
    return value


def _batch(kafka: EmbeddedKafka, topic: str, keys: int) -> None:
    produce(
        kafka.bootstrap_servers,
        topic,
        [(secrets.token_urlsafe(KEY_BYTES)[:KEY_BYTES], "v") for _ in range(keys)],
    )


def _df_avail(path: Path) -> int:
    out = subprocess.run(
        ["df", "-B1", "--output=avail", str(path)], capture_output=True, text=True, check=True
    )
    return int(out.stdout.split()[-1])


def _alert_states(prometheus: PrometheusServer, group: str, process: str) -> dict[str, str]:
    return {
        a["labels"]["alertname"]: a["state"]
        for a in prometheus.alerts()
        if a["labels"].get("group") == group and a["labels"].get("process") == process
    }


def _rendered_rules(tmp_path: Path) -> Path:
    """The Kafka Streams rule file rendered with TEST_VALUES, as a user renders theirs."""
    values = tmp_path / "alerting.yaml"
    values.write_text(TEST_VALUES)
    rules = tmp_path / "kafka-streams.rules.yml"
    rules.write_text(render_rule_files(load_values(values))["kafka-streams.rules.yml"])
    return rules


class _Fill:
    """What the test saw while filling the volume batch by batch."""

    def __init__(self) -> None:
        self.free: list[int] = []  # statvfs's free bytes once the sidecar agreed, per batch
        self.states: dict[str, set[str]] = {FILLING_UP: set(), NEARLY_FULL: set()}
        self.last: Samples = {}


def _fill_until_nearly_full(
    kafka: EmbeddedKafka,
    topic: str,
    agent: SidecarAgent,
    prometheus: PrometheusServer,
    volume: Path,
    subject: tuple[str, str],
) -> _Fill:
    fill = _Fill()
    while "firing" not in fill.states[NEARLY_FULL]:
        size, free = _truth(volume)
        assert free > size / 8, f"the volume filled up before the alerts fired: {fill.states}"
        _batch(kafka, topic, BATCH_KEYS)
        # The app writes on as it flushes and compacts: the sidecar's reading converges
        # on what the filesystem says once the writes settle.
        fill.last = agent.wait_for(
            "the sidecar's free bytes to equal statvfs's",
            lambda m: _agrees_with_statvfs(m, volume),
        )
        fill.free.append(_truth(volume)[1])
        for alertname, state in _alert_states(prometheus, *subject).items():
            fill.states.setdefault(alertname, set()).add(state)
    return fill


def test_the_state_volume_metrics_follow_statvfs_and_its_alerts_fire_as_the_app_fills_it(
    kafka: EmbeddedKafka,
    streams_app_build: StreamsAppBuild,
    small_volume: Path,
    tmp_path: Path,
) -> None:
    app = unique_name("state-volume")
    topic = f"{app}-input"
    create_topics(kafka.bootstrap_servers, {topic: 1})
    config = StreamsAppConfig(
        application_id=app,
        input_topic=topic,
        output_topic=f"{app}-out",
        # Every record to RocksDB (no record cache), whose memtables are flushed to its
        # files every 256 KiB rather than every 16 MiB.
        streams_config={"statestore.cache.max.bytes": "0"},
        rocksdb_write_buffer_bytes=256 << 10,
    )
    instance = StreamsAppInstance(
        streams_app_build, kafka.bootstrap_servers, config, app, small_volume.parent
    )
    assert instance.state_dir == small_volume
    rules = _rendered_rules(tmp_path)
    agent = prometheus = None
    instance.start()
    try:
        process = instance.wait_until_running()["processId"]
        agent = SidecarAgent(kafka, app, instance, tmp_path, expected_stream_threads=1)
        prometheus = PrometheusServer(
            tmp_path / "prometheus", {"ksmon-sidecar": [f"{LOOPBACK}:{agent.port}"]}, [rules]
        )
        prometheus.start()

        size, free = _truth(small_volume)
        assert size == VOLUME_MIB << 20
        assert _df_avail(small_volume) == free, "statvfs's f_bavail is df's Avail"
        seen = agent.wait_for(
            "the state volume on /metrics", lambda m: _agrees_with_statvfs(m, small_volume)
        )
        assert _volume(seen, "size") == size
        dir_before, free_before = _state_dir_bytes(seen), _truth(small_volume)[1]

        fill = _fill_until_nearly_full(
            kafka, topic, agent, prometheus, small_volume, (app, process)
        )

        readings = fill.free
        assert len(set(readings)) >= 3, f"the volume filled up gradually: {readings}"
        # The first batch may still sit in RocksDB's memtable, so free space has only
        # to fall by the end.
        assert readings[-1] < readings[0] <= free_before, readings
        assert readings[-1] < NEARLY_FULL_FREE * size
        # Most of the space went to the app's state (the rest: RocksDB's files being
        # written, rounded to pages).
        assert _state_dir_bytes(fill.last) - dir_before > (free_before - readings[-1]) / 2
        assert fill.states[FILLING_UP] & {"pending", "firing"}, fill.states

        def filling_up_fires() -> bool:
            return _alert_states(prometheus, app, process).get(FILLING_UP) == "firing"

        # Still writing: the trend reaches zero within the test's horizon.
        _batch(kafka, topic, BATCH_KEYS)
        wait_until(filling_up_fires, timeout=30, what=f"{FILLING_UP} firing", interval=0.5)
        (fired,) = [a for a in prometheus.alerts() if a["labels"]["alertname"] == NEARLY_FULL]
        assert fired["labels"]["kafka_cluster"] == "local"
        assert app in fired["annotations"]["description"]
        assert fired["annotations"]["runbook_url"].endswith(f"/{NEARLY_FULL}.md")
    finally:
        if prometheus is not None:
            prometheus.stop()
        code = agent.stop() if agent is not None else 0
        instance.stop(timeout=15)
    assert code == 0, "the sidecar stops cleanly"
    assert "Traceback" not in agent.log.read_text()
