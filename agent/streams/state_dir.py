"""The layout of a Kafka Streams state directory, and its small files (pure; no I/O).

``streams-internals.md`` section 7.1::

    <state.dir>/<application.id>/
        kafka-streams-process-metadata     {"processId":"<uuid>"} (2.8+, persistent stores)
        .lock
        global/                            global stores (not a task)
        <sub>_<partition>/                 one per task: active, standby or left over
            .checkpoint                    changelog offsets (section 7.2; see ``checkpoint``)
            rocksdb/<store>/               a RocksDB key-value store
            <store>/<store>.<segment>/     a segmented (window, session) store
        __<topology>__/<sub>_<partition>/  tasks of a named topology

Since Kafka Streams 4.3 (KIP-1035) RocksDB stores keep their changelog offsets
inside the store, and their tasks have no ``.checkpoint`` any more.

>>> task_of_directory("1_3"), task_of_directory("global")
('1_3', None)
>>> changelog_topic("app", "counts")
'app-counts-changelog'
>>> is_segment_directory("counts", "counts.1732406400000"), is_segment_directory("counts", "x.1")
(True, False)
"""

import json
import re
from typing import Final

from agent.streams.codec import DecodeError
from agent.streams.types import TaskId

PROCESS_METADATA_FILE: Final = "kafka-streams-process-metadata"
CHECKPOINT_FILE: Final = ".checkpoint"
ROCKSDB_DIR: Final = "rocksdb"
GLOBAL_DIR: Final = "global"
# Store kinds by layout: rocksdb/<store>/ is one RocksDB; <store>/<store>.<segment>/ is
# one RocksDB per segment (AbstractSegments.segmentName: the name, a '.', and the
# segment's start time in ms; Kafka Streams before 2.2 also wrote ':' + a date).
KEY_VALUE: Final = "key_value"
SEGMENTED: Final = "segmented"
_NAMED_TOPOLOGY_DIR: Final = re.compile(r"__(?P<name>.+)__")
_UUID: Final = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
)
_MAX_METADATA_BYTES: Final = 4096  # {"processId":"<36 chars>"}; anything much larger is not it


def task_of_directory(name: str, named_topology: str | None = None) -> str | None:
    """The task id a directory name stands for (``toTaskDirString``), or None for any other."""
    if "__" in name:
        return None
    task = TaskId.parse(name)
    if task is None:
        return None
    return str(TaskId(task.subtopology, task.partition, named_topology))


def named_topology_of_directory(name: str) -> str | None:
    """The topology name of a ``__<name>__`` directory, or None for any other."""
    match = _NAMED_TOPOLOGY_DIR.fullmatch(name)
    return match["name"] if match else None


def parse_process_metadata(data: bytes) -> str | DecodeError:
    """The process id in ``kafka-streams-process-metadata`` (JSON ``{"processId": ...}``)."""
    what = PROCESS_METADATA_FILE
    if len(data) > _MAX_METADATA_BYTES:
        return DecodeError(what, f"{len(data)} bytes, far more than a process id needs")
    try:
        document = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return DecodeError(what, "not JSON (torn, or not written by Kafka Streams)")
    process_id = document.get("processId") if isinstance(document, dict) else None
    if not isinstance(process_id, str) or not _UUID.fullmatch(process_id):
        return DecodeError(what, f"no processId UUID in {data[:80]!r}")
    return process_id.lower()


def process_id_from_client_id(client_id: str, application_id: str) -> str | None:
    """The process id inside a default client id ``<application.id>-<processId>``, if it is one.

    >>> process_id_from_client_id("app-5118960c-55bf-46ff-b9f2-ad95ee6584c5", "app")
    '5118960c-55bf-46ff-b9f2-ad95ee6584c5'
    """
    prefix = application_id + "-"
    if not client_id.startswith(prefix):
        return None
    rest = client_id[len(prefix) :]
    return rest.lower() if _UUID.fullmatch(rest) else None


def is_segment_directory(store: str, name: str) -> bool:
    """Whether ``name`` is a segment directory of segmented store ``store``."""
    if len(name) <= len(store) + 1 or not name.startswith(store):
        return False
    separator, rest = name[len(store)], name[len(store) + 1 :]
    return separator in ".:" and rest.isdigit()


def changelog_topic(application_id: str, store: str) -> str:
    """The changelog Kafka Streams creates for a logged store (``storeChangelogTopic``)."""
    return f"{application_id}-{store}-changelog"
