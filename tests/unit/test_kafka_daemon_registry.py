"""``ksmon kafka status|stop`` without ``--data-dir`` find the broker ``ksmon kafka start``
started, whatever its data dir, through the registry under the state dir.

No JVM: a "broker" here is a sleeping Python process whose command line carries
``kafka.Kafka`` and the data dir's ``server.properties``, which is all that
``RunRecord.is_live_broker`` checks; the Admin API probe is replaced. The real
broker's round trip is in tests/integration/test_kafka_cli.py.
"""

import dataclasses
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agent import cli
from agent.embedded import daemon
from agent.embedded.process import wait_until

FakeBroker = Callable[[Path], daemon.RunRecord]


@pytest.fixture(autouse=True)
def state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    state = tmp_path / "state"
    monkeypatch.setenv("KSMON_STATE_DIR", str(state))
    # Every broker here "answers": the probe is kafka-python against a real port.
    monkeypatch.setattr(daemon, "admin_answers", lambda _bootstrap: True)
    return state


@pytest.fixture
def fake_broker() -> Iterator[FakeBroker]:
    """Start a process that looks like the broker of a data dir, and write its run.json."""
    processes: list[subprocess.Popen[bytes]] = []

    def start(data_dir: Path) -> daemon.RunRecord:
        data_dir.mkdir(parents=True, exist_ok=True)
        properties = data_dir / "server.properties"
        process = subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(120)", "kafka.Kafka", str(properties)],
            # Its own process group, as the real broker's: `stop` signals the group.
            start_new_session=True,
        )
        processes.append(process)
        record = daemon.RunRecord(
            pid=process.pid,
            bootstrap_servers=f"127.0.0.1:{20000 + len(processes)}",
            kafka_version="4.3.1",
            log_path=str(data_dir / "logs" / "broker.log"),
            properties=str(properties),
        )
        (data_dir / daemon.RUN_FILE).write_text(json.dumps(dataclasses.asdict(record)))
        # Popen returns while the kernel still sets up the new program: its
        # /proc/<pid>/cmdline is empty for a moment.
        wait_until(record.is_live_broker, timeout=10, what="the fake broker's command line")
        return record

    yield start
    for process in processes:
        process.kill()
        process.wait()


def test_a_registered_broker_with_its_own_data_dir_is_found(
    tmp_path: Path, fake_broker: FakeBroker
) -> None:
    data_dir = tmp_path / "elsewhere"
    record = fake_broker(data_dir)
    daemon.register(data_dir)

    found = daemon.running_brokers()

    assert [(b.data_dir, b.record) for b in found] == [(data_dir.resolve(), record)]


def test_the_default_data_dir_is_looked_at_without_a_registry_entry(
    fake_broker: FakeBroker,
) -> None:
    # A broker started by a ksmon from before the registry, in the default place.
    record = fake_broker(daemon.default_data_dir())

    assert [b.record for b in daemon.running_brokers()] == [record]


def test_a_default_data_dir_that_is_also_registered_is_found_once(
    fake_broker: FakeBroker,
) -> None:
    fake_broker(daemon.default_data_dir())
    daemon.register(daemon.default_data_dir())

    assert len(daemon.running_brokers()) == 1


def test_an_entry_whose_broker_died_is_ignored_and_removed(
    tmp_path: Path, fake_broker: FakeBroker
) -> None:
    dead_dir, live_dir = tmp_path / "dead", tmp_path / "live"
    dead = fake_broker(dead_dir)
    fake_broker(live_dir)
    daemon.register(dead_dir)
    daemon.register(live_dir)
    os.kill(dead.pid, signal.SIGKILL)
    os.waitpid(dead.pid, 0)

    found = daemon.running_brokers()

    assert [b.data_dir for b in found] == [live_dir.resolve()]
    assert daemon.registered_data_dirs() == [live_dir.resolve()]


def test_a_reused_pid_is_not_taken_for_the_broker(tmp_path: Path) -> None:
    """The pid in run.json now belongs to another process (here: pytest itself)."""
    data_dir = tmp_path / "reused"
    data_dir.mkdir()
    record = daemon.RunRecord(
        pid=os.getpid(),
        bootstrap_servers="127.0.0.1:9092",
        kafka_version="4.3.1",
        log_path="broker.log",
        properties=str(data_dir / "server.properties"),
    )
    (data_dir / daemon.RUN_FILE).write_text(json.dumps(dataclasses.asdict(record)))
    daemon.register(data_dir)

    assert daemon.running_brokers() == []
    assert daemon.registered_data_dirs() == []


def test_unreadable_registry_entries_are_removed(state_dir: Path) -> None:
    registry = daemon.registry_dir()
    registry.mkdir(parents=True)
    (registry / "garbage.json").write_text("{not json")
    (registry / "wrong.json").write_text('{"dir": "/x"}')

    assert daemon.registered_data_dirs() == []
    assert list(registry.iterdir()) == []


def test_register_then_unregister_leaves_the_registry_empty(tmp_path: Path) -> None:
    daemon.register(tmp_path / "a")
    daemon.register(tmp_path / "a")  # a restart overwrites its entry
    daemon.register(tmp_path / "b")
    assert sorted(daemon.registered_data_dirs()) == [tmp_path / "a", tmp_path / "b"]

    daemon.unregister(tmp_path / "a")
    daemon.unregister(tmp_path / "b")

    assert daemon.registered_data_dirs() == []
    assert list(daemon.registry_dir().iterdir()) == []


def test_status_without_data_dir_reports_the_broker_it_found(
    tmp_path: Path, fake_broker: FakeBroker, capsys: pytest.CaptureFixture[str]
) -> None:
    data_dir = tmp_path / "elsewhere"
    record = fake_broker(data_dir)
    daemon.register(data_dir)

    code = cli.main(["kafka", "status"])

    out = capsys.readouterr().out
    assert code == 0
    assert out.startswith(f"Kafka 4.3.1 is running at {record.bootstrap_servers} ")
    assert f"(pid {record.pid}, answering); data dir: {data_dir.resolve()};" in out


def test_status_finding_nothing_says_where_it_looked_in_one_line(
    state_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = cli.main(["kafka", "status"])

    out = capsys.readouterr().out
    assert code == 1
    assert out.splitlines() == [
        f"Kafka is not running (looked in the default data dir {state_dir / 'kafka'} and "
        f"the data dirs `ksmon kafka start` registered in {state_dir / 'brokers'})"
    ]


def test_status_with_a_data_dir_says_which_it_looked_in(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = cli.main(["kafka", "status", "--data-dir", str(tmp_path / "nothing")])

    assert code == 1
    assert capsys.readouterr().out.strip() == (
        f"Kafka is not running (looked in {tmp_path / 'nothing'})"
    )


def test_stop_without_data_dir_stops_the_one_broker_and_unregisters_it(
    tmp_path: Path, fake_broker: FakeBroker, capsys: pytest.CaptureFixture[str]
) -> None:
    data_dir = tmp_path / "elsewhere"
    record = fake_broker(data_dir)
    daemon.register(data_dir)

    code = cli.main(["kafka", "stop"])

    assert code == 0
    assert capsys.readouterr().out.strip() == (
        f"Kafka stopped (it ran at {record.bootstrap_servers}, data dir {data_dir.resolve()})"
    )
    assert not record.is_live_broker()
    assert not (data_dir / daemon.RUN_FILE).exists()
    assert daemon.registered_data_dirs() == []


def test_stop_without_data_dir_refuses_to_guess_between_two_brokers(
    tmp_path: Path, fake_broker: FakeBroker, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("one", "two"):
        fake_broker(tmp_path / name)
        daemon.register(tmp_path / name)

    code = cli.main(["kafka", "stop"])

    err = capsys.readouterr().err
    assert code == 1
    assert len(err.strip().splitlines()) == 1
    assert err.startswith("ksmon: error: 2 local brokers run (")
    assert str(tmp_path / "one") in err
    assert "say which to stop with --data-dir" in err
    assert len(daemon.running_brokers()) == 2, "neither was stopped"
