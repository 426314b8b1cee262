"""The detectors, one module each: pure functions ``Context -> Detection``.

Each one reads the tables and rates of ``Context``, says where its rule holds
at each evaluation time (candidates with evidence and a one-line
explanation), and where it could judge (coverage). They never read a clock:
the evaluation times are data.
"""

from collections.abc import Callable

from agent.aggregation.candidates import Context, Detection
from agent.aggregation.detectors.assignment_size_risk import detect_assignment_size_risk
from agent.aggregation.detectors.copartition_mismatch import detect_copartition_mismatch
from agent.aggregation.detectors.hot_partitions_colocated import detect_hot_partitions_colocated
from agent.aggregation.detectors.idle_members import detect_idle_members
from agent.aggregation.detectors.internal_topic_budget import (
    detect_broker_partition_budget,
    detect_internal_topic_budget,
)
from agent.aggregation.detectors.no_live_consumers import detect_no_live_consumers
from agent.aggregation.detectors.partition_skew import detect_partition_skew
from agent.aggregation.detectors.rebalance_loop import detect_rebalance_loop
from agent.aggregation.detectors.restore_stalled import detect_restore_stalled
from agent.aggregation.detectors.state_store_footprint import detect_state_store_footprint
from agent.aggregation.detectors.stream_threads_dead import detect_stream_threads_dead
from agent.aggregation.detectors.threads_fewer_than_tasks import detect_threads_fewer_than_tasks

Detector = Callable[[Context], Detection]

DETECTORS: tuple[Detector, ...] = (
    detect_hot_partitions_colocated,
    detect_partition_skew,
    detect_restore_stalled,
    detect_stream_threads_dead,
    detect_no_live_consumers,
    detect_rebalance_loop,
    detect_idle_members,
    detect_assignment_size_risk,
    detect_internal_topic_budget,
    detect_broker_partition_budget,
    detect_copartition_mismatch,
    detect_threads_fewer_than_tasks,
    detect_state_store_footprint,
)

__all__ = ["DETECTORS", "Detector"]
