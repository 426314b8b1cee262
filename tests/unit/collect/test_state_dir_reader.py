"""Reading a state directory on a real filesystem, while something else writes to it."""

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.collect.state_dir_reader import StoreLayout, read_state_dir
from agent.streams.checkpoint import ChangelogOffset, CheckpointFile
from agent.streams.codec import DecodeError
from agent.streams.state_dir import is_segment_directory

UUID = "5118960c-55bf-46ff-b9f2-ad95ee6584c5"
CL = "app-counts-changelog"


def write(path: Path, content: bytes | str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content.encode() if isinstance(content, str) else content)


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    """A Kafka Streams 3.x state directory as the fixture app leaves it, plus odd corners."""
    app = tmp_path / "state" / "app"
    write(app / "kafka-streams-process-metadata", f'{{"processId":"{UUID}"}}')
    write(app / ".lock", b"")
    (app / "0_0").mkdir()  # a stateless task
    write(app / "1_0" / ".checkpoint", f"0\n1\n{CL} 0 426\n")
    write(app / "1_0" / "rocksdb" / "counts" / "000011.sst", b"x" * 1000)
    write(app / "1_0" / "rocksdb" / "counts" / "LOG", b"y" * 24)
    write(app / "1_1" / ".checkpoint", f"0\n2\n{CL} 1 372\n")  # torn
    write(app / "1_2" / ".checkpoint", f"0\n1\n{CL} 2 -4\n")  # registered, offset unknown
    write(app / "1_3" / "windowed" / "windowed.1700000000000" / "CURRENT", b"z")
    write(app / "global" / "rocksdb" / "g" / "000001.sst", b"g" * 10)
    write(app / "__orders__" / "0_1" / ".checkpoint", "0\n1\napp-orders-s-changelog 1 5\n")
    return tmp_path / "state"


def test_reads_the_process_id_tasks_checkpoints_stores_and_sizes(state_dir: Path) -> None:
    reading = read_state_dir(state_dir, "app")

    assert reading.readable
    assert reading.directory == state_dir / "app"
    assert reading.process_id == UUID
    by_task = {t.task: t for t in reading.tasks}
    assert list(by_task) == ["0_0", "1_0", "1_1", "1_2", "1_3", "orders__0_1"]
    assert by_task["0_0"].checkpoint is None
    assert by_task["1_0"].checkpoint == CheckpointFile((ChangelogOffset(CL, 0, 426),))
    assert by_task["1_0"].size_bytes == 1000 + 24 + len(f"0\n1\n{CL} 0 426\n")
    assert by_task["1_0"].stores == ("counts",)
    torn = by_task["1_1"].checkpoint
    assert isinstance(torn, DecodeError)
    assert "expected 2 entries, found 1" in torn.reason
    assert by_task["1_2"].checkpoint == CheckpointFile((), unknown=((CL, 2),))
    assert by_task["1_3"].stores == ("windowed",), "a segmented store's directory"
    assert by_task["orders__0_1"].checkpoint == CheckpointFile(
        (ChangelogOffset("app-orders-s-changelog", 1, 5),)
    )
    files = [p for p in (state_dir / "app").rglob("*") if p.is_file()]
    assert reading.total_bytes == sum(p.stat().st_size for p in files), "global stores count too"


def test_the_app_directory_itself_may_be_given(state_dir: Path) -> None:
    reading = read_state_dir(state_dir / "app", "app")

    assert reading.readable
    assert reading.process_id == UUID


def test_a_directory_that_is_not_mounted_is_unreadable_with_the_reason(tmp_path: Path) -> None:
    reading = read_state_dir(tmp_path / "nowhere", "app")

    assert not reading.readable
    assert reading.error is not None
    assert "No such file or directory" in reading.error
    assert reading.tasks == ()


def test_a_torn_process_metadata_file_is_reported_not_raised(state_dir: Path) -> None:
    write(state_dir / "app" / "kafka-streams-process-metadata", '{"processId":"5118')

    reading = read_state_dir(state_dir, "app")

    assert reading.process_id is None
    assert reading.process_metadata_error is not None
    assert reading.readable


@pytest.fixture
def busy_task(tmp_path: Path) -> Iterator[tuple[Path, list[bytes], threading.Event]]:
    """A task directory whose .checkpoint another thread keeps replacing the way Kafka
    Streams does (write .checkpoint.tmp, move it over) or deleting (exactly-once), and
    whose RocksDB files come and go (compaction)."""
    task = tmp_path / "app" / "1_0"
    (task / "rocksdb" / "counts").mkdir(parents=True)
    versions = [
        f"0\n{n}\n".encode() + b"".join(f"{CL} {p} {p * 7}\n".encode() for p in range(n))
        for n in (1, 3, 5)
    ]
    stop = threading.Event()

    def churn() -> None:
        n = 0
        while not stop.is_set():
            n += 1
            tmp = task / ".checkpoint.tmp"
            tmp.write_bytes(versions[n % len(versions)])
            tmp.replace(task / ".checkpoint")
            sst = task / "rocksdb" / "counts" / f"{n:06d}.sst"
            sst.write_bytes(b"s" * 100)
            if n % 7 == 0:
                (task / ".checkpoint").unlink()  # exactly-once deletes it while the task runs
            old = task / "rocksdb" / "counts" / f"{n - 3:06d}.sst"
            old.unlink(missing_ok=True)

    writer = threading.Thread(target=churn, daemon=True)
    writer.start()
    yield tmp_path, versions, stop
    stop.set()
    writer.join(timeout=5)


def test_reading_while_the_app_replaces_and_deletes_files_never_fails(
    busy_task: tuple[Path, list[bytes], threading.Event],
) -> None:
    root, versions, _ = busy_task
    whole = {len(v.splitlines()) - 2 for v in versions}
    seen: set[object] = set()

    for _ in range(300):
        (task,) = read_state_dir(root, "app").tasks
        checkpoint = task.checkpoint
        assert not isinstance(checkpoint, DecodeError), "an atomic move is never seen torn"
        if checkpoint is None:
            seen.add("deleted")
        else:
            assert len(checkpoint.offsets) in whole
            seen.add(len(checkpoint.offsets))
        assert task.size_bytes >= 0
    assert len(seen) >= 2, f"the writer really changed the file under the reader: {seen}"


def test_store_layouts_name_key_value_and_segmented_stores_with_their_segments(
    tmp_path: Path,
) -> None:
    """The layouts Kafka Streams writes: rocksdb/<store>/ (one RocksDB), and a window
    store's <store>/<store>.<segment start ms>/ (one RocksDB per segment)."""
    app = tmp_path / "app"
    write(app / "0_0" / "rocksdb" / "counts" / "000011.sst", b"c" * 700)
    write(app / "0_0" / "rocksdb" / "table-store" / "CURRENT", b"t" * 16)
    write(app / "0_0" / "counts.position", "0\n0\n")
    window = app / "1_2" / "windowed-counts"
    for start in (1700000040000, 1700000100000, 1700000160000):
        write(window / f"windowed-counts.{start}" / "000007.sst", b"w" * 100)
    write(window / "windowed-counts.1700000220000" / "CURRENT", b"")
    (window / "not-a-segment").mkdir()  # neither <store>.<digits> nor a file counted
    write(window / "windowed-counts.position", "0\n0\n")  # a file, not a segment
    (app / "1_3" / "empty-window").mkdir(parents=True)  # created, no segment yet

    by_task = {t.task: t for t in read_state_dir(tmp_path, "app").tasks}

    assert by_task["0_0"].layouts == (
        StoreLayout("counts", "key_value", 0, 700),
        StoreLayout("table-store", "key_value", 0, 16),
    )
    assert by_task["1_2"].layouts == (
        StoreLayout("windowed-counts", "segmented", 4, 300 + len("0\n0\n")),
    )
    assert by_task["1_3"].layouts == (StoreLayout("empty-window", "segmented", 0, 0),)
    assert by_task["0_0"].stores == ("counts", "table-store")


@pytest.mark.parametrize(
    ("store", "name", "segment"),
    [
        ("w", "w.1700000040000", True),
        ("w", "w:201812230000", True),  # the pre-2.2 date form, renamed on open
        ("w", "w.", False),
        ("w", "w.x1", False),
        ("w", "wx.1", False),
        ("w.a", "w.a.60000", True),  # a store name with a dot
        ("w", "other.60000", False),
    ],
)
def test_segment_directory_names(store: str, name: str, segment: bool) -> None:
    assert is_segment_directory(store, name) is segment
