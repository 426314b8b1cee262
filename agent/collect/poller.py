"""One cluster's poll: which requests, in which order, and what to do when they fail.

A poll lists the groups, looks up their coordinators, describes them and
fetches their committed offsets (batched per coordinator), reads metadata and
latest/earliest offsets for the partitions that matter (batched per leader),
refreshes the slow-moving facts (topic list, configs, sizes) every
``metadata_interval``, and hands everything to the pure builder.

Failures are data: a failed request becomes a ``PollError`` in the snapshots
it concerns; only a cluster that cannot be reached at all fails the poll.
"""

import logging
import re
import time
import typing
from collections import Counter, defaultdict
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from agent.collect.app_scrape import Scrape
from agent.collect.build import (
    OFFSETS_TOPIC,
    GroupRebalanceFacts,
    PollObservation,
    TopicPartitionKey,
    build_snapshots,
    is_streams_group,
    streams_internal_topics,
)
from agent.collect.kafka_edge import (
    EARLIEST,
    LATEST,
    KafkaEdge,
    KafkaUnavailableError,
    describe_exception,
)
from agent.collect.lag_time import DatingAnswer, DatingWanted, OffsetHistory, date_backlogs
from agent.collect.raw import (
    ClusterMetadataCache,
    ConsumerGroupDescription,
    DescribedGroup,
    FailedRequest,
    GroupOffsets,
    ListedGroup,
    PartitionOffset,
    StreamsGroupDescription,
    TopicMetadata,
    cluster_load,
)
from agent.collect.sidecar import SidecarCollector, SidecarObservation
from agent.model import AgentInfo, Snapshot
from agent.model.poll_result import PollResult, SidecarReport
from agent.streams.codec import DecodeError
from agent.streams.consumer_protocol import decode_consumer_assignment
from agent.streams.topology import TopologyDescription

log = logging.getLogger(__name__)

# Group types ksmon understands; "connect" and share groups have no consumer offsets to watch.
_WATCHED_PROTOCOL_TYPES = {"consumer", "streams", ""}
_CLASSIC_TYPES = {"classic", ""}
_GROUP_ID_NOT_FOUND = 69  # DescribeGroups' answer for a group of another type
# The state a coordinator reports for a group it does not hold (deleted, or expired).
DEAD = "Dead"
# How many polls a vanished group's deletion is asked about before it is let go (its
# coordinator unreachable all along): bounds what the agent remembers.
_DEPARTURE_POLLS = 30
# ListOffsets errors that mean the leader kept for a partition is no longer its leader:
# UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE, NOT_LEADER_OR_FOLLOWER,
# FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH.
_LEADER_MOVED = {3, 5, 6, 74, 75}


@dataclass(frozen=True, slots=True)
class GroupFilter:
    allow: tuple[re.Pattern[str], ...] = (re.compile(".*"),)
    deny: tuple[re.Pattern[str], ...] = ()

    def wants(self, group_id: str) -> bool:
        if any(p.fullmatch(group_id) for p in self.deny):
            return False
        return any(p.fullmatch(group_id) for p in self.allow)


class RebalanceSource:
    """Where exact rebalance facts come from (the __consumer_offsets tail), if anywhere."""

    def facts(self, group_ids: Iterable[str]) -> dict[str, GroupRebalanceFacts]:
        return {}


class ClusterPoller:
    def __init__(
        self,
        cluster: str,
        agent: AgentInfo,
        edge: KafkaEdge,
        *,
        group_filter: GroupFilter | None = None,
        metadata_interval: float = 60.0,
        history: OffsetHistory | None = None,
        rebalances: RebalanceSource | None = None,
        sidecar: SidecarCollector | None = None,
        topologies: Mapping[str, TopologyDescription] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """``sidecar`` scopes the poll to its application's group (no ListGroups, no
        all-topics Metadata) and adds what it sees in the pod to that group's snapshot.
        ``topologies``: configured describe() texts by group id, shipped as the groups'
        sub-topologies where the broker holds none."""
        self.cluster = cluster
        self.agent = agent
        self.edge = edge
        self.group_filter = group_filter or GroupFilter()
        self.metadata_interval = metadata_interval
        self.history = history or OffsetHistory()
        self.rebalances = rebalances or RebalanceSource()
        self.sidecar = sidecar
        self.topologies = dict(topologies or {})
        self.clock = clock
        self.metadata = ClusterMetadataCache()
        self.sequence = 0
        self.dating_rounds = 0  # ListOffsets-by-time rounds asked since start
        self._leaders: dict[str, TopicMetadata] = {}  # kept between metadata refreshes
        self._starts: dict[TopicPartitionKey, PartitionOffset] = {}  # ditto, earliest offsets
        # Groups the last poll watched, and those gone from the listing whose deletion
        # is not confirmed yet (with the polls left to confirm it).
        self._watched: dict[str, ListedGroup] = {}
        self._vanished: dict[str, tuple[ListedGroup, int]] = {}
        self._failed_polls = 0  # in a row, each warned about: the next good poll says so

    def poll(self) -> PollResult:
        self.sequence += 1
        started = self.clock()
        before = Counter(self.edge.requests)
        result = PollResult(self.cluster, self.sequence, started, 0.0)
        observation = self._observe_pod()
        try:
            self._poll_into(result, started, observation)
        except KafkaUnavailableError as e:
            result.error = str(e)
            log.warning("poll of cluster %s failed: %s", self.cluster, result.error)
            self.edge.reset()
        except Exception as e:  # noqa: BLE001 - a poll that cannot reach the cluster is reported, not raised
            name, text, _ = describe_exception(e)
            result.error = f"{name}: {text}" if text else name
            log.warning("poll of cluster %s failed: %s", self.cluster, result.error)
            self.edge.reset()
        self._note_recovery(result)
        if self.sidecar is not None and observation is not None:
            self._attach_sidecar(result, self.sidecar, observation)
        result.duration_seconds = self.clock() - started
        result.requests = Counter(self.edge.requests) - before
        return result

    def _note_recovery(self, result: PollResult) -> None:
        if not result.ok:
            self._failed_polls += 1
            return
        if self._failed_polls:
            log.info(
                "poll of cluster %s works again, after %s",
                self.cluster,
                f"{self._failed_polls} failed poll{'s' * (self._failed_polls != 1)}",
            )
        self._failed_polls = 0

    def _observe_pod(self) -> SidecarObservation | None:
        if self.sidecar is None:
            return None
        try:
            return self.sidecar.observe()
        except Exception as e:  # a bug guard: the edges report failures themselves
            log.exception("observing the app in the pod failed")
            return SidecarObservation(Scrape(error=f"ksmon failed to observe the app: {e!r}"))

    def _attach_sidecar(
        self, result: PollResult, sidecar: SidecarCollector, observation: SidecarObservation
    ) -> None:
        group = sidecar.application_id
        mine = next((s for s in result.snapshots if s.group.group_id == group), None)
        info = sidecar.report(observation, mine.members if mine is not None else ())
        result.snapshots = [
            replace(s, sidecar=info) if s.group.group_id == group else s for s in result.snapshots
        ]
        result.sidecar = SidecarReport(group, info)

    def _watched_groups(self, result: PollResult) -> list[ListedGroup]:
        if self.sidecar is not None:
            # Its own application only: described by id, never listed.
            return [ListedGroup(self.sidecar.application_id, "consumer", "", "")]
        listed = self.edge.list_groups()
        result.groups_listed = len(listed)
        return sorted(
            (
                g
                for g in listed
                if g.protocol_type in _WATCHED_PROTOCOL_TYPES
                and self.group_filter.wants(g.group_id)
            ),
            key=lambda g: g.group_id,
        )

    def _describe(
        self,
        groups: Sequence[ListedGroup],
        coordinators: dict[str, int],
        failures: list[FailedRequest],
    ) -> tuple[
        dict[str, DescribedGroup],
        dict[str, ConsumerGroupDescription],
        dict[str, StreamsGroupDescription],
    ]:
        """Each group described by the API of its type; failed requests go to ``failures``."""
        classic = [g.group_id for g in groups if g.group_type in _CLASSIC_TYPES]
        modern = [g.group_id for g in groups if g.group_type == "consumer"]
        streams = [g.group_id for g in groups if g.group_type == "streams"]
        consumer_groups: dict[str, ConsumerGroupDescription] = {}
        if modern:
            described_modern, modern_failures = self.edge.describe_consumer_groups(
                _by_coordinator(modern, coordinators)
            )
            failures += modern_failures
            consumer_groups = {d.group_id: d for d in described_modern}
        described_list, describe_failures = self.edge.describe_groups(
            _by_coordinator(classic, coordinators)
        )
        failures += describe_failures
        described = {d.group_id: d for d in described_list}
        # A group of unknown type (a sidecar's own, never listed; any group on brokers
        # before 3.8) that the broker says is not classic may be a KIP-1071 streams
        # group: ask again in the same poll. Costs one failing request per poll.
        untyped = {g.group_id for g in groups if not g.group_type}
        retry = [
            group_id
            for group_id, d in described.items()
            if d.error_code == _GROUP_ID_NOT_FOUND and group_id in untyped
        ]
        streams_groups: dict[str, StreamsGroupDescription] = {}
        if streams or retry:
            described_streams, streams_failures = self.edge.describe_streams_groups(
                _by_coordinator(streams + retry, coordinators)
            )
            # A retry that fails leaves the classic answer (and its error) as it was.
            failures += [f for f in streams_failures if set(f.groups) & set(streams)]
            for d in described_streams:
                if d.group_id in streams or not d.error_code:
                    streams_groups[d.group_id] = d
                    if d.group_id in retry:
                        del described[d.group_id]
        return described, consumer_groups, streams_groups

    def _poll_into(
        self, result: PollResult, started: float, pod: SidecarObservation | None
    ) -> None:
        groups = self._watched_groups(result)
        failures: list[FailedRequest] = []
        coordinators, lookup_failures = self.edge.coordinators(g.group_id for g in groups)
        failures += lookup_failures

        described, consumer_groups, streams_groups = self._describe(groups, coordinators, failures)

        offsets_list, fetch_failures = self.edge.offset_fetch(
            _by_coordinator([g.group_id for g in groups], coordinators)
        )
        failures += fetch_failures
        offsets = {o.group_id: o for o in offsets_list}

        refresh = self._metadata_due(started)
        everything = self._refresh_topic_list(started) if refresh else None
        if everything is not None and self.sidecar is None:
            self.metadata.load = cluster_load(
                everything,
                self.edge.broker_ids(),
                self._streams_internal(groups, described, offsets, streams_groups),
            )
        topics = self._topics_that_matter(groups, described, offsets)
        topics.update(t for d in consumer_groups.values() for m in d.members for t, _ in m.assigned)
        topics.update(
            t
            for d in streams_groups.values()
            for sub in d.subtopologies or ()
            for t in (*sub.source_topics, *sub.repartition_source_topics)
        )
        if self.sidecar is not None and pod is not None:
            topics.update(self.sidecar.changelog_topics(pod))
        if refresh:
            failures += self._refresh_topic_facts(sorted(topics | {OFFSETS_TOPIC}))
        metadata, fetched = self._topic_leaders(topics, refresh, everything, offsets)
        if self.sidecar is not None:
            # No all-topics listing in sidecar mode: the internal topics are the
            # candidate names that exist.
            self.metadata.all_topics = tuple(sorted(metadata))
        by_leader = _partitions_by_leader(metadata.values())
        log_end, latest_failures = self._log_ends(metadata, by_leader, fetched)
        log_start, earliest_failures = self._log_starts(by_leader, refresh)
        failures += latest_failures + earliest_failures

        now = self.clock()
        ends, starts = _by_key(log_end), log_start
        self.history.record_poll({key: p.offset for key, p in ends.items()}, now)
        committed = _committed_by_partition(offsets.values())
        failures += self._date_backlogs(committed, metadata, ends, starts, now, offsets)
        if not fetch_failures and all(not o.error_code for o in offsets.values()):
            # Every group's committed offsets are known: points below all of them go.
            self.history.prune_below(committed)

        observation = PollObservation(
            cluster=self.cluster,
            agent=self.agent,
            sequence=result.sequence,
            started_at=started,
            duration_seconds=now - started,
            groups=groups,
            described=described,
            consumer_groups=consumer_groups,
            streams_groups=streams_groups,
            offsets=offsets,
            topics=metadata,
            log_end=ends,
            log_start=starts,
            metadata=self.metadata,
            failures=failures,
            rebalances=self.rebalances.facts(g.group_id for g in groups),
            known_streams=frozenset(
                [self.sidecar.application_id] if self.sidecar is not None else []
            ),
            topologies=self.topologies,
        )
        result.snapshots = build_snapshots(observation, self.history, now)
        if self.sidecar is None:
            try:
                result.departed = self._departures(observation, now)
            except KafkaUnavailableError as e:
                # The groups' snapshots are built: asking about vanished ones can wait.
                log.info("cluster %s: vanished groups asked about next poll: %s", self.cluster, e)

    def _departures(self, observation: PollObservation, now: float) -> list[Snapshot]:
        """Dead snapshots for groups that left the listing and whose coordinator says
        they are gone. A group merely missing from a listing (its coordinator's broker
        down, so not listed) is asked again at the next polls, never declared gone."""
        listed = {g.group_id: g for g in observation.groups}
        for group_id, group in self._watched.items():
            if group_id not in listed and group_id not in self._vanished:
                self._vanished[group_id] = (group, _DEPARTURE_POLLS)
        self._watched = listed
        for group_id in [g for g in self._vanished if g in listed]:
            del self._vanished[group_id]  # back (or never gone)
        if not self._vanished:
            return []
        asked = [group for group, _ in self._vanished.values()]
        coordinators, _ = self.edge.coordinators(g.group_id for g in asked)
        described, consumer_groups, streams_groups = self._describe(asked, coordinators, [])
        gone: list[ListedGroup] = []
        for group in asked:
            answers = (
                described.get(group.group_id),
                consumer_groups.get(group.group_id),
                streams_groups.get(group.group_id),
            )
            if any(_says_gone(a) for a in answers) and not any(_says_held(a) for a in answers):
                gone.append(replace(group, state=DEAD))
                del self._vanished[group.group_id]
                continue
            _, polls_left = self._vanished[group.group_id]
            if polls_left <= 1:
                log.info(
                    "group %s on cluster %s left the listing; its deletion was never "
                    "confirmed by its coordinator and is no longer asked about",
                    group.group_id,
                    self.cluster,
                )
                del self._vanished[group.group_id]
            else:
                self._vanished[group.group_id] = (group, polls_left - 1)
        if not gone:
            return []
        for group in gone:
            log.info("group %s on cluster %s was deleted", group.group_id, self.cluster)
        farewell = replace(
            observation,
            groups=gone,
            described={},
            consumer_groups={},
            streams_groups={},
            offsets={},
            rebalances={},
        )
        return build_snapshots(farewell, self.history, now)

    def _topic_leaders(
        self,
        topics: set[str],
        refresh: bool,
        everything: list[TopicMetadata] | None,
        offsets: Mapping[str, GroupOffsets],
    ) -> tuple[dict[str, TopicMetadata], set[str]]:
        """The topics' partitions and leaders, and which of them were asked for now.

        Leaders rarely move: they are kept between polls and asked for again at every
        metadata refresh, for topics not seen before or with a partition committed
        beyond those kept (partitions were added), and (``_log_ends``) when a leader
        no longer answers for its partitions. A refresh of a central agent already
        read every topic."""
        if refresh:
            self._leaders.clear()
            if everything is not None and self.sidecar is None:
                self._leaders.update(
                    (t.name, t) for t in everything if t.error_code == 0 and t.name in topics
                )
        kept = self._leaders
        for g in offsets.values():
            for topic, partition, _offset, _metadata, _error in g.offsets:  # unpacked: 20,000
                known = kept.get(topic)
                if known is not None and partition >= len(known.leaders):
                    del kept[topic]
        missing = sorted(t for t in topics if t not in self._leaders)
        if missing:
            self._leaders.update(
                (t.name, t) for t in self.edge.topic_metadata(missing) if t.error_code == 0
            )
        for gone in [t for t in self._leaders if t not in topics]:
            del self._leaders[gone]
        fetched = set(missing) | (set(self._leaders) if refresh else set())
        return {t: self._leaders[t] for t in topics if t in self._leaders}, fetched

    def _log_ends(
        self,
        metadata: dict[str, TopicMetadata],
        by_leader: dict[int, list[TopicPartitionKey]],
        fetched: set[str],
    ) -> tuple[list[PartitionOffset], list[FailedRequest]]:
        """Latest offsets; where kept leaders turn out wrong (a partition's error says
        its leader moved, or its broker did not answer), the leaders are asked again and
        those partitions once more, in the same poll (``by_leader`` is brought up to
        date)."""
        log_end, failures = self.edge.list_offsets(by_leader, LATEST)
        asked = sum(len(partitions) for partitions in by_leader.values())
        if len(log_end) == asked and all(p.error_code not in _LEADER_MOVED for p in log_end):
            return log_end, failures  # the usual poll: every leader answered for its own
        answered = {(p.topic, p.partition) for p in log_end if p.error_code not in _LEADER_MOVED}
        moved = {
            topic
            for partitions in by_leader.values()
            for topic, partition in partitions
            if (topic, partition) not in answered and topic not in fetched
        }
        if not moved:
            return log_end, failures
        for t in self.edge.topic_metadata(sorted(moved)):
            if t.error_code == 0:
                self._leaders[t.name] = metadata[t.name] = t
        by_leader.clear()
        by_leader.update(_partitions_by_leader(metadata.values()))
        again, failures = self.edge.list_offsets(
            _partitions_by_leader(metadata[t] for t in moved if t in metadata), LATEST
        )
        kept = [p for p in log_end if p.topic not in moved]
        return kept + again, failures

    def _log_starts(
        self, by_leader: dict[int, list[TopicPartitionKey]], refresh: bool
    ) -> tuple[dict[TopicPartitionKey, PartitionOffset], list[FailedRequest]]:
        """Earliest offsets, asked at every metadata refresh and for partitions not seen
        before: retention moves them by whole segments, minutes apart, and asking at
        every poll cost a third of a poll's requests."""
        starts = self._starts
        if refresh:
            starts.clear()
        new = {
            leader: fresh
            for leader, partitions in by_leader.items()
            if (fresh := [tp for tp in partitions if tp not in starts])
        }
        failures: list[FailedRequest] = []
        if new:
            found, failures = self.edge.list_offsets(new, EARLIEST)
            starts.update(((p.topic, p.partition), p) for p in found if p.offset is not None)
        polled = sum(len(tps) for tps in by_leader.values())
        if not new and polled == len(starts):
            return dict(starts), failures  # the usual poll: the same partitions, all known
        wanted = {tp: starts[tp] for tps in by_leader.values() for tp in tps if tp in starts}
        if len(wanted) < len(starts):
            self._starts = dict(wanted)  # partitions no longer polled
        return wanted, failures

    def _date_backlogs(  # noqa: PLR0917 - one poll's facts, all needed
        self,
        committed: Mapping[TopicPartitionKey, list[int]],
        metadata: Mapping[str, TopicMetadata],
        ends: Mapping[TopicPartitionKey, PartitionOffset],
        starts: Mapping[TopicPartitionKey, PartitionOffset],
        now: float,
        offsets: Mapping[str, GroupOffsets],
    ) -> list[FailedRequest]:
        """Date, from the broker's time index, the committed offsets older than what the
        agent's own table covers (a backlog older than its uptime, a rewound group):
        only partitions some group is behind on, and only until their table covers
        them (``lag_time.date_backlogs``)."""
        wanted: dict[Hashable, DatingWanted] = {}
        for key, values in committed.items():
            end = ends.get(key)
            if end is None or end.offset is None or min(values) >= end.offset:
                continue  # the commonest: every group caught up
            behind = tuple(sorted({c for c in values if c < end.offset}))
            start = starts.get(key)
            log_start = start.offset if start is not None else None
            if any(self.history.needs_dating(key, c, log_start, now) for c in behind):
                wanted[key] = DatingWanted(behind, log_start, end.offset)
        if not wanted:
            return []
        leaders = {
            (name, partition): leader
            for name, topic in metadata.items()
            for partition, leader in enumerate(topic.leaders)
        }
        failures: list[FailedRequest] = []

        def ask(
            questions: dict[Hashable, float],
        ) -> tuple[dict[Hashable, DatingAnswer], set[Hashable]]:
            by_leader: dict[int, list[tuple[str, int, int]]] = defaultdict(list)
            for key, at in questions.items():
                topic, partition = typing.cast(TopicPartitionKey, key)
                leader = leaders.get((topic, partition), -1)
                if leader >= 0:
                    by_leader[leader].append((topic, partition, int(at * 1000)))
            found, failed = self.edge.offsets_for_times(by_leader)
            failures.extend(failed)
            answers: dict[Hashable, DatingAnswer] = {}
            refused: set[Hashable] = set()
            for t in found:
                key = (t.topic, t.partition)
                if t.offset is None:
                    refused.add(key)
                else:
                    answers[key] = DatingAnswer(
                        t.offset, t.timestamp_ms / 1000 if t.timestamp_ms >= 0 else None
                    )
            return answers, refused

        outcome = date_backlogs(self.history, wanted, ask, now)
        self.dating_rounds += outcome.rounds
        log.debug(
            "cluster %s: dated %d partitions from the broker in %d rounds (%d undatable)",
            self.cluster,
            outcome.partitions,
            outcome.rounds,
            outcome.undatable,
        )
        if not failures:
            return []
        # It concerns the groups behind on those partitions, and one failed request per
        # round would repeat the same error: say it once.
        concerned = tuple(
            sorted(
                g.group_id
                for g in offsets.values()
                if any((c.topic, c.partition) in wanted for c in g.offsets)
            )
        )
        unique = {(f.stage, f.error, f.message): f for f in failures}
        return [replace(f, groups=concerned) for f in unique.values()]

    def _metadata_due(self, now: float) -> bool:
        refreshed = self.metadata.refreshed_at
        return refreshed is None or now - refreshed >= self.metadata_interval

    def _refresh_topic_list(self, now: float) -> list[TopicMetadata]:
        """Every topic name (to find Streams internal topics) and cluster-wide facts.

        A sidecar asks only for ``__consumer_offsets``: it finds its app's
        internal topics by name (``SidecarCollector.changelog_topics``).
        Returns what the Metadata request answered (every topic, for a central agent).
        """
        everything = self.edge.topic_metadata(None if self.sidecar is None else [OFFSETS_TOPIC])
        offsets_topic = next((t for t in everything if t.name == OFFSETS_TOPIC), None)
        self.metadata.refreshed_at = now
        if self.sidecar is None:
            self.metadata.all_topics = tuple(
                sorted(t.name for t in everything if t.error_code == 0)
            )
        self.metadata.broker_count = len(self.edge.broker_ids())
        self.metadata.offsets_topic_partitions = (
            len(offsets_topic.leaders) if offsets_topic else None
        )
        return everything

    def _streams_internal(
        self,
        groups: Sequence[ListedGroup],
        described: dict[str, DescribedGroup],
        offsets: dict[str, GroupOffsets],
        streams_groups: dict[str, StreamsGroupDescription],
    ) -> set[str]:
        """The internal topics of every Kafka Streams application this poll watches."""
        return {
            topic
            for g in groups
            if g.group_id in streams_groups
            or is_streams_group(g, described.get(g.group_id), offsets.get(g.group_id))
            for topic in streams_internal_topics(g.group_id, self.metadata.all_topics)
        }

    def _refresh_topic_facts(self, topics: Sequence[str]) -> list[FailedRequest]:
        """Configs and sizes on disk of the topics ksmon reports on, and broker limits."""
        failures: list[FailedRequest] = []
        brokers = self.edge.broker_ids()
        try:
            configs, message_max_bytes = self.edge.describe_configs(
                topics, brokers[0] if brokers else None
            )
            self.metadata.topic_configs = configs
            self.metadata.broker_message_max_bytes = message_max_bytes
            offsets_config = configs.get(OFFSETS_TOPIC)
            self.metadata.offsets_topic_max_message_bytes = (
                offsets_config.max_message_bytes if offsets_config else None
            )
        except Exception as e:  # noqa: BLE001 - configs are optional facts; keep the last ones
            name, text, retriable = describe_exception(e)
            failures.append(FailedRequest("describe_configs", name, text, retriable))
        sizes, size_failures = self.edge.log_dir_sizes(topics)
        failures += size_failures
        if sizes:
            self.metadata.topic_sizes = sizes
        return failures

    def _topics_that_matter(
        self,
        groups: Sequence[ListedGroup],
        described: dict[str, DescribedGroup],
        offsets: dict[str, GroupOffsets],
    ) -> set[str]:
        topics = {c.topic for o in offsets.values() for c in o.offsets}
        for g in groups:
            if is_streams_group(g, described.get(g.group_id), offsets.get(g.group_id)):
                topics.update(streams_internal_topics(g.group_id, self.metadata.all_topics))
        # Partitions assigned but never committed still have log-end offsets worth knowing.
        for d in described.values():
            for m in d.members:
                if m.assignment:
                    decoded = decode_consumer_assignment(m.assignment)
                    if not isinstance(decoded, DecodeError):
                        topics.update(tp.topic for tp in decoded.partitions)
        return topics


def _says_gone(
    answer: DescribedGroup | ConsumerGroupDescription | StreamsGroupDescription | None,
) -> bool:
    """A coordinator's answer that it holds no such group (classic: state Dead;
    KIP-848 and KIP-1071 describes: GROUP_ID_NOT_FOUND)."""
    if answer is None:
        return False
    return answer.error_code == _GROUP_ID_NOT_FOUND or (
        not answer.error_code and answer.state == DEAD
    )


def _says_held(
    answer: DescribedGroup | ConsumerGroupDescription | StreamsGroupDescription | None,
) -> bool:
    """A coordinator's answer that the group exists (under any of the APIs asked)."""
    return answer is not None and not answer.error_code and answer.state not in ("", DEAD)


def _by_coordinator(group_ids: Iterable[str], coordinators: dict[str, int]) -> dict[int, list[str]]:
    grouped: dict[int, list[str]] = defaultdict(list)
    for group_id in group_ids:
        coordinator = coordinators.get(group_id)
        if coordinator is not None:
            grouped[coordinator].append(group_id)
    return dict(grouped)


def _partitions_by_leader(topics: Iterable[TopicMetadata]) -> dict[int, list[tuple[str, int]]]:
    grouped: dict[int, list[tuple[str, int]]] = defaultdict(list)
    for topic in topics:
        for partition, leader in enumerate(topic.leaders):
            if leader >= 0:
                grouped[leader].append((topic.name, partition))
    return dict(grouped)


def _by_key(offsets: Sequence[PartitionOffset]) -> dict[tuple[str, int], PartitionOffset]:
    return {(p.topic, p.partition): p for p in offsets}


def _committed_by_partition(
    groups: Iterable[GroupOffsets],
) -> dict[TopicPartitionKey, list[int]]:
    """Every group's committed offset, per partition."""
    committed: dict[TopicPartitionKey, list[int]] = {}
    for g in groups:
        # Unpacked, not read by field name (a NamedTuple's fields are properties), and
        # no defaultdict: 20,000 offsets a poll, nearly all of them one to a partition.
        for topic, partition, offset, _metadata, error_code in g.offsets:
            if error_code == 0 and offset >= 0:
                key = (topic, partition)
                others = committed.get(key)
                if others is None:
                    committed[key] = [offset]
                else:
                    others.append(offset)
    return committed
