"""The gauge rows an evaluation returns (plain Python: /metrics reads them without Spark)."""

from typing import NamedTuple

# Gauge names inside the job; exposition maps them to metric families.
PARTITION_RATE = "partition_rate"
TASK_RATE = "task_rate"
THREAD_LOAD = "thread_load"
INSTANCE_LOAD = "instance_load"
THREADS_EXPECTED = "threads_expected"
RESTORE_REMAINING = "restore_remaining"
RESTORE_RATE = "restore_rate"
RESTORE_ETA = "restore_eta"
REBALANCES = "rebalances"
UNSTABLE_RATIO = "unstable_ratio"
STORE_MEMORY_ESTIMATE = "store_memory_estimate"
GROUP_STATUS = "group_status"  # 1 for the group's status, 0 for the others (``status``)
GROUP_STATUS_PARTITIONS = "group_status_partitions"  # partitions in each ``status``
# A partition not ok: its ``status`` and, as the value, its lag (the JSON API's; not /metrics).
PARTITION_STATUS = "partition_status"

GAUGE_LABELS = ("process", "thread", "task", "topic", "partition", "source", "status")


class GaugeRow(NamedTuple):
    """A gauge with its group's labels (a NamedTuple, as ``rules.base.Gauge``)."""

    metric: str
    cluster: str
    group: str
    value: float
    process: str | None = None
    thread: int | None = None
    task: str | None = None
    topic: str | None = None
    partition: int | None = None
    source: str | None = None
    status: str | None = None
