"""A synthetic fleet of Kafka Streams apps, polled every 10 s: the snapshots an agent would ship.

Shared by ``replay_throughput.py`` and ``stream_latency.py``. Every snapshot is
the model's own record (``agent.model.snapshot``) serialised as the agent
does, so the job parses exactly what it reads in production.

Each app is a ``count`` topology like the fixture app's: sub-topology 0 reads
``<app>-in`` (P partitions) and writes ``<app>-counts-repartition``, which
sub-topology 1 reads into the ``counts`` store (changelog
``<app>-counts-changelog``). So a group consumes 2P partitions, has 2P tasks
and one changelog of P partitions, spread over instances x threads members.
Input partitions grow at 5-11 records/s each (a few at 0, as in real topics).

Every tenth app is healthy in its own way, the others carry one problem each,
so every detector has real work and some findings come out (app ``g`` by
``g % 10``):

* 0: two hot input partitions (120 records/s) whose tasks sit on one member
  (``hot_partitions_colocated``; the hot partitions also skew the topic)
* 1: one input partition carries more than half of its topic (``partition_skew``)
* 2: half-way through, one stream thread of instance 1 dies and its tasks move to
  the instance's other thread (``stream_threads_dead``)
* 3: one thread re-joins under a new member id every other poll, with the
  group in PreparingRebalance in between (``rebalance_loop``)
* 4: instance 3 restarted with no local state: its stateful tasks report an
  offset sum far below the changelog's end and their input stops committing
  (``restore_stalled``, broker view)
* 5: the group is Empty for the second half, its lag growing (``no_live_consumers``)
* 6-9: healthy
"""

import multiprocessing
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from agent.model import (
    SCHEMA_VERSION,
    AgentInfo,
    ClusterFacts,
    GroupInfo,
    MemberInfo,
    PartitionInfo,
    PollInfo,
    Snapshot,
    StreamsMemberInfo,
    StreamsTask,
    TaskOffsetSum,
    TopicInfo,
    TopicPartitionRef,
)

CLUSTER = "bench"
AGENT = AgentInfo("bench-agent", "0.1.0", "central")
POLL_SECONDS = 10.0
HOT_RATE = 120.0
IDLE_EVERY = 11  # one input partition in 11 gets no records
SKEWED = 3  # the input partition that carries most of a skewed topic
SCENARIOS = (
    "hot",
    "skew",
    "thread_dies",
    "rejoin_loop",
    "restore_stalled",
    "empty",
    "healthy",
    "healthy",
    "healthy",
    "healthy",
)
CHANGELOG_START = 50_000  # well past acceptable.recovery.lag (10,000) for the restore case


@dataclass(frozen=True)
class FleetShape:
    groups: int = 100
    input_partitions: int = 32  # P: the group consumes 2P partitions (input + repartition)
    instances: int = 4
    threads: int = 2

    @property
    def partitions_per_snapshot(self) -> int:
        return 2 * self.input_partitions


@dataclass(frozen=True)
class _Member:
    process: str
    thread: int
    member_id: str
    tasks: dict[str, list[TopicPartitionRef]]
    offset_sums: dict[str, int]


class App:
    """One Streams app of the fleet: its topics, members and rates, poll by poll."""

    def __init__(self, index: int, shape: FleetShape, t0: float, polls: int) -> None:
        self.index = index
        self.shape = shape
        self.t0 = t0
        self.polls = polls
        self.scenario = SCENARIOS[index % len(SCENARIOS)]
        self.name = f"bench-app-{index:05d}"
        self.input = f"{self.name}-in"
        self.repartition = f"{self.name}-counts-repartition"
        self.changelog = f"{self.name}-counts-changelog"
        self.processes = [str(uuid.UUID(int=(index << 16) + i + 1)) for i in range(shape.instances)]
        p = shape.input_partitions
        members = shape.instances * shape.threads
        rates = [0.0 if q % 11 == IDLE_EVERY - 1 else 5.0 + q % 7 for q in range(p)]
        if self.scenario == "hot":
            # Tasks are dealt round-robin, so partitions 0 and `members` share member 0.
            rates[0] = rates[members % p] = HOT_RATE
        elif self.scenario == "skew":
            rates[SKEWED] = 1.2 * sum(r for q, r in enumerate(rates) if q != SKEWED)
        self.input_rates = rates
        self.repartition_rate = sum(rates) / p  # a groupBy spreads keys evenly

    # -- time ---------------------------------------------------------------------------

    def at(self, poll: int) -> float:
        return self.t0 + poll * POLL_SECONDS

    def _elapsed(self, poll: int) -> float:
        return poll * POLL_SECONDS

    # -- members ------------------------------------------------------------------------

    def _members(self, poll: int) -> list[_Member]:
        shape = self.shape
        half = self.polls // 2
        if self.scenario == "empty" and poll >= half:
            return []
        slots = [
            (proc, thread) for proc in self.processes for thread in range(1, shape.threads + 1)
        ]
        if self.scenario == "thread_dies" and poll >= half:
            slots.remove((self.processes[1], shape.threads))
        tasks: dict[tuple[str, int], dict[str, list[TopicPartitionRef]]] = {s: {} for s in slots}
        order = [(0, q) for q in range(shape.input_partitions)]
        order += [(1, q) for q in range(shape.input_partitions)]
        full = [(proc, thread) for proc in self.processes for thread in range(1, shape.threads + 1)]
        for i, (sub, q) in enumerate(order):
            slot = full[i % len(full)]
            if slot not in tasks:  # a dead thread's tasks go to its instance's first thread
                slot = (slot[0], 1)
            topic = self.input if sub == 0 else self.repartition
            tasks[slot][f"{sub}_{q}"] = [TopicPartitionRef(topic, q)]
        members = []
        for proc, thread in slots:
            generation = 0
            if self.scenario == "rejoin_loop" and (proc, thread) == (self.processes[2], 1):
                generation = poll // 2  # a new member id every other poll
            restoring = self.scenario == "restore_stalled" and proc == self.processes[3]
            offset_sums = {
                task: (0 if restoring and task.startswith("1_") else -2)
                for task in tasks[proc, thread]
            }
            client = f"{self.name}-{proc}-StreamThread-{thread}-consumer"
            members.append(
                _Member(
                    proc,
                    thread,
                    f"{client}-{uuid.UUID(int=(self.index << 40) + (generation << 8) + thread)}",
                    tasks[proc, thread],
                    offset_sums,
                )
            )
        return members

    def _restoring_partitions(self, poll: int) -> set[tuple[str, int]]:
        if self.scenario != "restore_stalled":
            return set()
        return {
            (ref.topic, ref.partition)
            for m in self._members(poll)
            if m.process == self.processes[3]
            for task, refs in m.tasks.items()
            if task.startswith("1_")
            for ref in refs
        }

    # -- one snapshot -------------------------------------------------------------------

    def snapshot(self, poll: int) -> Snapshot:
        t = self.at(poll)
        elapsed = self._elapsed(poll)
        members = self._members(poll)
        owner = {
            (ref.topic, ref.partition): m.member_id
            for m in members
            for refs in m.tasks.values()
            for ref in refs
        }
        stalled = self._restoring_partitions(poll)
        empty = not members
        rebalancing = self.scenario == "rejoin_loop" and poll % 2 == 1
        partitions = []
        for topic, rates in (
            (self.input, self.input_rates),
            (self.repartition, [self.repartition_rate] * self.shape.input_partitions),
        ):
            for q, rate in enumerate(rates):
                end = 1_000 + round(rate * elapsed)
                if (topic, q) in stalled or empty:
                    committed = 1_000 + round(rate * self._elapsed(self.polls // 2))
                    committed = min(committed, end)
                else:
                    committed = max(0, end - round(rate * 1.5))
                partitions.append(
                    PartitionInfo(
                        topic=topic,
                        partition=q,
                        log_end_offset=end,
                        log_start_offset=0,
                        committed_offset=committed,
                        lag=end - committed,
                        lag_seconds=(end - committed) / rate if rate else 0.0,
                        owner_member_id=owner.get((topic, q)),
                        stream_time_ms=round((t - 1) * 1000),
                        leader_id=1,
                    )
                )
        changelog_ends = tuple(
            CHANGELOG_START + round(self.repartition_rate * 0.2 * elapsed)
            for _ in range(self.shape.input_partitions)
        )
        p = self.shape.input_partitions
        return Snapshot(
            schema_version=SCHEMA_VERSION,
            cluster=CLUSTER,
            agent=AGENT,
            poll=PollInfo(sequence=poll + 1, started_at=t, duration_seconds=0.7),
            group=GroupInfo(
                group_id=self.name,
                group_type="classic",
                state="Empty" if empty else "PreparingRebalance" if rebalancing else "Stable",
                protocol_type="consumer",
                protocol=None if empty else "stream",
                coordinator_id=1,
                is_streams=True,
            ),
            members=tuple(self._member_info(m) for m in members),
            partitions=tuple(partitions),
            topics=(
                TopicInfo(self.input, p, consumed=True, cleanup_policy="delete"),
                TopicInfo(
                    self.repartition,
                    p,
                    internal_kind="repartition",
                    consumed=True,
                    cleanup_policy="delete",
                ),
                TopicInfo(
                    self.changelog,
                    p,
                    internal_kind="changelog",
                    cleanup_policy="compact",
                    size_bytes=sum(changelog_ends) * 60,
                    log_end_offsets=changelog_ends,
                ),
            ),
            cluster_facts=ClusterFacts(
                broker_count=3,
                offsets_topic_max_message_bytes=1_048_588,
                offsets_topic_partitions=50,
            ),
        )

    def _member_info(self, m: _Member) -> MemberInfo:
        refs = tuple(ref for refs in m.tasks.values() for ref in refs)
        return MemberInfo(
            member_id=m.member_id,
            client_id=f"{self.name}-{m.process}-StreamThread-{m.thread}-consumer",
            client_host=f"/10.1.{self.index % 250}.{self.processes.index(m.process) + 1}",
            assigned_partitions=refs,
            subscribed_topics=(self.input, self.repartition),
            subscription_bytes=400 + 12 * len(m.tasks),
            assignment_bytes=300 + 40 * len(m.tasks),
            streams=StreamsMemberInfo(
                process_id=m.process,
                thread_index=m.thread,
                base_client_id=f"{self.name}-{m.process}",
                subscription_version=11,
                latest_supported_version=11,
                assignment_version=11,
                commonly_supported_version=11,
                active_tasks=tuple(
                    StreamsTask(task, tuple(refs)) for task, refs in m.tasks.items()
                ),
                task_offset_sums=tuple(TaskOffsetSum(task, s) for task, s in m.offset_sums.items()),
                subscription_error_code=0,
                assignment_error_code=0,
            ),
        )


def fleet(shape: FleetShape, t0: float, polls: int) -> list[App]:
    return [App(g, shape, t0, polls) for g in range(shape.groups)]


def poll_lines(apps: list[App], poll: int) -> Iterator[bytes]:
    """One poll of every app, as the JSON lines the agent's spool sink writes."""
    for app in apps:
        yield app.snapshot(poll).to_json() + b"\n"


def _write_file(job: tuple[Path, FleetShape, float, int, int, int]) -> tuple[int, int, int]:
    path, shape, t0, polls, first, last = job
    apps = fleet(shape, t0, polls)
    snapshots = rows = size = 0
    tmp = path.with_suffix(".part")
    with tmp.open("wb") as out:
        for poll in range(first, last):
            for app in apps:
                snapshot = app.snapshot(poll)
                line = snapshot.to_json() + b"\n"
                out.write(line)
                snapshots += 1
                rows += len(snapshot.partitions)
                size += len(line)
    tmp.replace(path)
    return snapshots, rows, size


def write_recording(
    directory: Path, shape: FleetShape, t0: float, polls: int, polls_per_file: int = 6
) -> tuple[int, int, int]:
    """JSON-lines files, one per ``polls_per_file`` polls (a minute at 10 s polls), written by
    two processes (serialising 40 kB snapshots is slow). Returns (snapshots, partition rows,
    bytes) written.
    """
    directory.mkdir(parents=True, exist_ok=True)
    jobs = [
        (directory / f"snapshots-{first:06d}.jsonl", shape, t0, polls, first,
         min(polls, first + polls_per_file))
        for first in range(0, polls, polls_per_file)
    ]  # fmt: skip
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        done = pool.map(_write_file, jobs)
    return (
        sum(d[0] for d in done),
        sum(d[1] for d in done),
        sum(d[2] for d in done),
    )
