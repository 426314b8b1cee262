"""Where the demo's hot key goes, so that its two hot tasks share one instance.

The demo app counts records by key: sub-topology 0 reads the input topic and
repartitions by key, sub-topology 1 counts. A key that lands on input
partition ``p`` keeps landing on partition ``p`` of the repartition topic, so
its traffic makes two tasks hot: ``0_p`` and ``1_p``. Kafka Streams balances
task counts, not load; when both tasks sit on one instance, that instance
carries the whole hot key while the other idles: what ksmon reports as
``hot_partitions_colocated``.
"""

from collections.abc import Mapping, Set
from dataclasses import dataclass

from agent.embedded.load import key_for_partition


@dataclass(frozen=True, slots=True)
class HotKeyPlan:
    key: str
    partition: int
    instance: str  # the instance (process id) that holds both hot tasks
    tasks: tuple[str, str]


def plan_hot_key(
    active_tasks: Mapping[str, Set[str]], partitions: int, prefix: str = "customer"
) -> HotKeyPlan | None:
    """A key whose two tasks are both on one instance, given each instance's active tasks.

    >>> plan = plan_hot_key({"a": {"0_1", "1_1", "1_0", "0_2"}, "b": {"1_2", "0_0"}}, 3)
    >>> (plan.partition, plan.instance, plan.tasks)
    (1, 'a', ('0_1', '1_1'))
    """
    for partition in range(partitions):
        tasks = (f"0_{partition}", f"1_{partition}")
        for instance, held in sorted(active_tasks.items()):
            if set(tasks) <= held:
                key = key_for_partition(partition, partitions, prefix)
                return HotKeyPlan(key, partition, instance, tasks)
    return None
