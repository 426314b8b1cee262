"""Read a running Kafka Streams app's state directory (mounted read-only), never disturbing it.

The app writes while the sidecar reads: RocksDB creates and deletes files
during compaction, ``.checkpoint`` is replaced atomically (``.checkpoint.tmp``
moved over it), and under exactly-once Kafka Streams deletes it while a task
runs. So every file may vanish or change between listing and reading: a file
gone is simply absent, a size that cannot be taken is skipped, and a
checkpoint read half-written is a parse error in the result, never a crash.
Only plain files and directories are followed (no symlinks), and small files
are read with a size cap.
"""

import os
from dataclasses import dataclass
from pathlib import Path

from agent.streams.checkpoint import CheckpointFile, parse_checkpoint
from agent.streams.codec import DecodeError
from agent.streams.state_dir import (
    CHECKPOINT_FILE,
    KEY_VALUE,
    PROCESS_METADATA_FILE,
    ROCKSDB_DIR,
    SEGMENTED,
    is_segment_directory,
    named_topology_of_directory,
    parse_process_metadata,
    task_of_directory,
)

_MAX_SMALL_FILE = 1 << 20  # a .checkpoint has one line per changelog partition of a task
_POSITION_SUFFIX = ".position"


@dataclass(frozen=True, slots=True)
class StoreLayout:
    """A persistent store's directory: ``rocksdb/<store>/`` (``key_value``, one RocksDB)
    or ``<store>/`` holding ``<store>.<segment>/`` directories (``segmented``, one
    RocksDB each)."""

    name: str
    kind: str  # "key_value" | "segmented"
    segments: int  # segment directories; 0 for key_value
    size_bytes: int


@dataclass(frozen=True, slots=True)
class TaskDirReading:
    task: str
    checkpoint: CheckpointFile | DecodeError | None  # None: no .checkpoint file
    size_bytes: int
    stores: tuple[str, ...] = ()  # store names the layout shows (rocksdb/<store>, <store>/...)
    layouts: tuple[StoreLayout, ...] = ()  # the stores with a directory, by name


@dataclass(frozen=True, slots=True)
class StateDirReading:
    directory: Path  # <state.dir>/<application.id>
    readable: bool
    error: str | None = None
    process_id: str | None = None
    process_metadata_error: str | None = None
    tasks: tuple[TaskDirReading, ...] = ()
    total_bytes: int | None = None


def app_directory(state_dir: Path, application_id: str) -> Path:
    """``<state.dir>/<application.id>``, or ``state_dir`` itself if it is already that."""
    nested = state_dir / application_id
    if not nested.is_dir() and (state_dir / PROCESS_METADATA_FILE).is_file():
        return state_dir
    return nested


def read_state_dir(state_dir: Path, application_id: str) -> StateDirReading:
    directory = app_directory(state_dir, application_id)
    try:
        entries = list(os.scandir(directory))
    except OSError as e:
        return StateDirReading(directory, readable=False, error=f"{directory}: {_reason(e)}")
    process_id, metadata_error = _process_id(directory / PROCESS_METADATA_FILE)
    tasks: list[TaskDirReading] = []
    total = 0
    for entry in entries:
        if not _is_dir(entry):
            total += _file_size(entry)
            continue
        topology = named_topology_of_directory(entry.name)
        if topology is not None:
            for nested in _scandir(entry.path):
                task = task_of_directory(nested.name, topology) if _is_dir(nested) else None
                if task is not None:
                    tasks.append(_read_task(task, Path(nested.path)))
            total += _tree_size(entry.path)
            continue
        task = task_of_directory(entry.name)
        if task is not None:
            reading = _read_task(task, Path(entry.path))
            tasks.append(reading)
            total += reading.size_bytes
        else:
            total += _tree_size(entry.path)  # global stores and anything else
    return StateDirReading(
        directory,
        readable=True,
        process_id=process_id,
        process_metadata_error=metadata_error,
        tasks=tuple(sorted(tasks, key=lambda t: t.task)),
        total_bytes=total,
    )


def _read_task(task: str, path: Path) -> TaskDirReading:
    data = _small_file(path / CHECKPOINT_FILE)
    checkpoint: CheckpointFile | DecodeError | None
    if isinstance(data, str):
        checkpoint = DecodeError(CHECKPOINT_FILE, f"cannot read it: {data}")
    else:
        checkpoint = parse_checkpoint(data) if data is not None else None
    stores: set[str] = set()
    layouts: list[StoreLayout] = []
    for entry in _scandir(path):
        if entry.name == ROCKSDB_DIR and _is_dir(entry):
            for store in _scandir(entry.path):
                if _is_dir(store):
                    stores.add(store.name)
                    layouts.append(StoreLayout(store.name, KEY_VALUE, 0, _tree_size(store.path)))
        elif _is_dir(entry):
            stores.add(entry.name)  # a segmented store: <store>/<store>.<segment>/
            segments = sum(
                1
                for e in _scandir(entry.path)
                if _is_dir(e) and is_segment_directory(entry.name, e.name)
            )
            layouts.append(StoreLayout(entry.name, SEGMENTED, segments, _tree_size(entry.path)))
        elif entry.name.endswith(_POSITION_SUFFIX):
            stores.add(entry.name.removesuffix(_POSITION_SUFFIX))
    return TaskDirReading(
        task,
        checkpoint,
        _tree_size(str(path)),
        tuple(sorted(stores)),
        tuple(sorted(layouts, key=lambda layout: layout.name)),
    )


def _process_id(path: Path) -> tuple[str | None, str | None]:
    data = _small_file(path)
    if data is None:
        return None, None  # apps without persistent stores (or before 2.8) write none
    if isinstance(data, str):
        return None, f"{PROCESS_METADATA_FILE}: cannot read it: {data}"
    parsed = parse_process_metadata(data)
    return (None, str(parsed)) if isinstance(parsed, DecodeError) else (parsed, None)


def _small_file(path: Path) -> bytes | str | None:
    """The file's bytes (at most ``_MAX_SMALL_FILE``); None if it is not there (any more);
    the reason as text if it is there but cannot be read."""
    try:
        with path.open("rb") as f:
            return f.read(_MAX_SMALL_FILE)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as e:
        return _reason(e)


def _scandir(path: str | os.PathLike[str]) -> list[os.DirEntry[str]]:
    try:
        return list(os.scandir(path))
    except OSError:
        return []  # removed meanwhile (a task directory cleaned up), or unreadable


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _file_size(entry: os.DirEntry[str]) -> int:
    try:
        return (
            entry.stat(follow_symlinks=False).st_size if entry.is_file(follow_symlinks=False) else 0
        )
    except OSError:
        return 0  # deleted between listing and stat (RocksDB compaction)


def _tree_size(path: str) -> int:
    total = 0
    pending = [path]
    while pending:
        for entry in _scandir(pending.pop()):
            if _is_dir(entry):
                pending.append(entry.path)
            else:
                total += _file_size(entry)
    return total


def _reason(error: OSError) -> str:
    return error.strerror or type(error).__name__
