"""The families with a series per group and partition, written a group at a time.

At 1,000 groups x 20 partitions they are most of the agent's samples, and
adding them one at a time (a call, a label template and a number each) was a
large share of the agent's CPU. Here one loop over a group's partitions
writes the lines of all its families: a partition's label text is made once for
its lag, lag in seconds and committed offset, label values are escaped once per
group (a topic once per poll), and each family's lines are joined a group at a
time and compressed as they come (``PackedTextFamily``): held as text until the
last group, they were the agent's peak memory.

``AgentMetrics`` stays the reference: it adds the same samples one by one to
prometheus_client's families (the golden files freeze those), and tests compare
its bytes with these. Names, HELP texts and labels come from the same
``FamilySpec``s.
"""

from collections.abc import Iterator

from agent.exposition.agent_metrics import (
    PARTITION_ASSIGNMENT_INFO,
    PARTITION_COMMITTED_OFFSET,
    PARTITION_LAG,
    PARTITION_LAG_SECONDS,
    PARTITION_LOG_END_OFFSET,
    PARTITION_LOG_START_OFFSET,
    TOPIC_PARTITION_KEY,
    AgentMetrics,
    Family,
    LagGranularity,
    topic_lag,
)
from agent.exposition.text_format import (
    TextFamilies,
    label_template,
    label_value,
    number_text,
)
from agent.model import Snapshot


class _LabelValues(dict[str, str]):
    """Label values as written, each escaped once (a poll names 95 topics 20,000 times)."""

    def __missing__(self, value: str) -> str:
        text = self[value] = label_value(value)
        return text


class BulkTextMetrics(AgentMetrics):
    """``AgentMetrics`` as text, the per-partition families written in bulk."""

    def __init__(
        self, *, agent_id: str, mode: str, lag_granularity: LagGranularity = "partition"
    ) -> None:
        self.families = TextFamilies()
        super().__init__(
            self.families, agent_id=agent_id, mode=mode, lag_granularity=lag_granularity
        )

    def partitions(self, snapshots: list[Snapshot]) -> Iterator[Family]:
        topics = _LabelValues()
        if self.lag_granularity == "topic":
            yield from topic_lag(self.families, snapshots)
        else:
            yield from self._partition_lag(snapshots, topics)
        yield from self._log_offsets(snapshots, topics)

    def _partition_lag(self, snapshots: list[Snapshot], topics: _LabelValues) -> Iterator[Family]:
        lag = self.families.packed_gauge(*PARTITION_LAG)
        seconds = self.families.packed_gauge(*PARTITION_LAG_SECONDS)
        committed = self.families.packed_gauge(*PARTITION_COMMITTED_OFFSET)
        owner = self.families.packed_gauge(*PARTITION_ASSIGNMENT_INFO)
        template = label_template(PARTITION_LAG.labels)
        owner_template = label_template(PARTITION_ASSIGNMENT_INFO.labels)
        lag_name, seconds_name, committed_name = lag.sample, seconds.sample, committed.sample
        for s in snapshots:
            cluster, group = label_value(s.cluster), label_value(s.group.group_id)
            members = {m.member_id: m for m in s.members}
            lags: list[str] = []
            lags_seconds: list[str] = []
            committeds: list[str] = []
            owners: list[str] = []
            for p in s.partitions:
                topic = topics[p.topic]
                labels = template.format(cluster, group, topic, p.partition)
                if p.lag is not None:
                    lags.append(f"{lag_name}{labels} {number_text(p.lag)}\n")
                if p.lag_seconds is not None:
                    lags_seconds.append(f"{seconds_name}{labels} {number_text(p.lag_seconds)}\n")
                if p.committed_offset is not None:
                    committeds.append(
                        f"{committed_name}{labels} {number_text(p.committed_offset)}\n"
                    )
                member = members.get(p.owner_member_id or "") if members else None
                if member is not None:
                    member_labels = owner_template.format(
                        cluster,
                        group,
                        topic,
                        p.partition,
                        label_value(member.member_id),
                        label_value(member.client_id),
                        label_value(member.client_host),
                    )
                    owners.append(f"{owner.sample}{member_labels} 1.0\n")
            lag.add_lines(lags)
            seconds.add_lines(lags_seconds)
            committed.add_lines(committeds)
            owner.add_lines(owners)
        yield from (lag, seconds, committed, owner)

    def _log_offsets(self, snapshots: list[Snapshot], topics: _LabelValues) -> Iterator[Family]:
        end = self.families.packed_gauge(*PARTITION_LOG_END_OFFSET)
        start = self.families.packed_gauge(*PARTITION_LOG_START_OFFSET)
        template = label_template(TOPIC_PARTITION_KEY)  # both families' labels
        # Groups that read the same partition share its series: the first one writes it.
        seen: set[tuple[str, str, int]] = set()
        for s in snapshots:
            cluster = label_value(s.cluster)
            ends: list[str] = []
            starts: list[str] = []
            for p in s.partitions:
                key = (s.cluster, p.topic, p.partition)
                if key in seen:
                    continue
                seen.add(key)
                labels = template.format(cluster, topics[p.topic], p.partition)
                if p.log_end_offset is not None:
                    ends.append(f"{end.sample}{labels} {number_text(p.log_end_offset)}\n")
                if p.log_start_offset is not None:
                    starts.append(f"{start.sample}{labels} {number_text(p.log_start_offset)}\n")
            end.add_lines(ends)
            start.add_lines(starts)
        yield from (end, start)
