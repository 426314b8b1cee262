"""The only code that talks to a Kafka cluster for the poller: Admin API requests
sent through kafka-python's connections, their responses turned into ``raw``
types. The two that carry every partition (ListOffsets, OffsetFetch) are written
and read by ``wire``; the rest are kafka-python's protocol classes. No
interpretation happens here; failures are returned, not raised, so one bad group
or broker never stops the rest of a poll.

Requests are batched the way the protocol allows (see ``docs/snapshot.md``):
FindCoordinator for many groups at once, DescribeGroups and OffsetFetch per
coordinator, ListOffsets per partition leader, one Metadata and one
DescribeConfigs per refresh, DescribeLogDirs per broker. Every request sent
is counted by API, so tests and benchmarks can prove the count does not grow
with the number of groups.
"""

import logging
import re
import threading
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from agent import kafka_python_fixes
from agent.collect.raw import (
    ConsumerGroupDescription,
    ConsumerGroupMember,
    DescribedGroup,
    FailedRequest,
    GroupOffsets,
    ListedGroup,
    PartitionOffset,
    RawMember,
    StreamsGroupDescription,
    StreamsGroupMember,
    StreamsTaskSet,
    Subtopology,
    TimedOffset,
    TopicConfig,
    TopicMetadata,
)

log = logging.getLogger(__name__)

T = TypeVar("T")

LATEST = -1  # ListOffsets timestamp sentinels
EARLIEST = -2
# Coordinator errors after which the cached coordinator must be looked up again.
_COORDINATOR_MOVED = {14, 15, 16}
_TOPIC_RESOURCE = 2
_BROKER_RESOURCE = 4


class KafkaUnavailableError(Exception):
    """The cluster could not be reached at all (bootstrap or the first request failed)."""


def error_name(code: int) -> tuple[str, bool]:
    """The Kafka error's class name and whether it is retriable."""
    from kafka import errors  # noqa: PLC0415 - kafka-python is slow to import

    kind = errors.for_code(code)
    return kind.__name__, bool(getattr(kind, "retriable", False))


def describe_exception(error: BaseException) -> tuple[str, str, bool]:
    """(type name, one line of text, retriable); kafka-python's repeated
    "[Error 58] SaslAuthenticationFailedError: ..." prefixes are removed."""
    name = type(error).__name__
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    previous = None
    while text != previous:
        previous = text
        text = re.sub(rf"^(\[Error -?\d+\] )?{re.escape(name)}:\s*", "", text)
    return name, text[:500], bool(getattr(error, "retriable", False))


class KafkaEdge:
    """One cluster's Admin connection. Thread-safe; one poll at a time is expected."""

    def __init__(self, client_settings: Mapping[str, object]) -> None:
        self._settings = dict(client_settings)
        self._admin: Any = None
        self._lock = threading.Lock()
        self._coordinators: dict[str, int] = {}
        self.requests: Counter[str] = Counter()

    # -- connection ----------------------------------------------------------

    def _client(self) -> Any:
        with self._lock:
            if self._admin is None:
                from kafka.admin import KafkaAdminClient  # noqa: PLC0415
                from kafka.net.compat import KafkaNetClient  # noqa: PLC0415

                # Keep a handle on the network client: when bootstrap fails, it knows
                # whether the real reason was a refused login or certificate.
                created: list[Any] = []

                def network_client(**settings: Any) -> Any:
                    client = KafkaNetClient(**settings)
                    created.append(client)
                    return client

                kafka_python_fixes.install()
                try:
                    admin = KafkaAdminClient(**self._settings, kafka_client=network_client)
                except Exception as e:
                    sasl = str(self._settings.get("security_protocol", "")).startswith("SASL")
                    reason = _bootstrap_failure(created, sasl=sasl)
                    _discard(created)
                    if reason is None:
                        name, text, _ = describe_exception(e)
                        reason = f"{name}: {text}"
                    raise KafkaUnavailableError(reason) from e
                self._count_requests(admin)
                self._admin = admin
            return self._admin

    def _count_requests(self, admin: Any) -> None:
        manager = admin._manager
        send = manager.send

        def counting_send(request: Any, node_id: Any = None, request_timeout_ms: Any = None) -> Any:
            self.requests[type(request).__name__.split("_v")[0].removesuffix("Request")] += 1
            return send(request, node_id=node_id, request_timeout_ms=request_timeout_ms)

        manager.send = counting_send

    def reset(self) -> None:
        """Drop the connection (after failures); the next call reconnects from bootstrap."""
        with self._lock:
            self._drop()

    def close(self, timeout: float = 1.0) -> None:
        """Drop the connection, waiting at most ``timeout`` for a connection being made
        (a bootstrap to a dead broker lasts its request timeout): a stopping agent
        leaves that one to its daemon thread."""
        if not self._lock.acquire(timeout=timeout):
            log.debug("closing the Kafka connection: a bootstrap is under way; left to it")
            return
        try:
            self._drop()
        finally:
            self._lock.release()

    def _drop(self) -> None:
        admin, self._admin = self._admin, None
        self._coordinators.clear()
        if admin is not None:
            try:
                admin.close()
            except Exception as e:  # noqa: BLE001 - closing a broken client may fail in any way
                log.debug("closing the admin client failed: %s", e)

    def _run(self, coroutine: Callable[..., Awaitable[T]], *args: object) -> T:
        admin = self._client()
        result: T = admin._manager.run(coroutine, *args)
        return result

    def broker_ids(self) -> list[int]:
        admin = self._client()
        return sorted(int(b.node_id) for b in admin._manager.cluster.brokers())

    # -- groups --------------------------------------------------------------

    def list_groups(self) -> list[ListedGroup]:
        """ListGroups on every broker (each lists the groups it coordinates)."""
        from kafka.protocol.admin import ListGroupsRequest  # noqa: PLC0415

        async def run() -> list[ListedGroup]:
            admin = self._admin
            futures = [
                admin._manager.send(ListGroupsRequest(types_filter=[]), node_id=broker)
                for broker in self.broker_ids()
            ]
            listed: list[ListedGroup] = []
            for future in futures:
                response = await future
                if response.error_code:
                    name, _ = error_name(response.error_code)
                    raise KafkaUnavailableError(f"ListGroups failed: {name}")
                listed.extend(
                    ListedGroup(
                        group_id=g.group_id,
                        protocol_type=g.protocol_type or "",
                        state=getattr(g, "group_state", "") or "",
                        group_type=getattr(g, "group_type", "") or "",
                    )
                    for g in response.groups
                )
            return listed

        return self._run(run)

    def coordinators(self, group_ids: Iterable[str]) -> tuple[dict[str, int], list[FailedRequest]]:
        """Coordinator broker per group: cached, unknown ones looked up in one request."""
        from kafka.protocol.metadata import FindCoordinatorRequest  # noqa: PLC0415

        wanted = list(dict.fromkeys(group_ids))
        unknown = [g for g in wanted if g not in self._coordinators]
        failures: list[FailedRequest] = []
        if unknown:

            async def run() -> Any:
                request = FindCoordinatorRequest(
                    key_type=0, coordinator_keys=unknown, min_version=4
                )
                return await self._admin._manager.send(request)

            response = self._run(run)
            for row in response.coordinators:
                if row.error_code:
                    name, retriable = error_name(row.error_code)
                    failures.append(
                        FailedRequest(
                            "find_coordinator",
                            name,
                            row.error_message or name,
                            retriable,
                            (row.key,),
                        )
                    )
                else:
                    self._coordinators[row.key] = int(row.node_id)
        return {g: self._coordinators[g] for g in wanted if g in self._coordinators}, failures

    def forget_coordinator(self, group_id: str) -> None:
        self._coordinators.pop(group_id, None)

    def describe_groups(
        self, by_coordinator: Mapping[int, Sequence[str]]
    ) -> tuple[list[DescribedGroup], list[FailedRequest]]:
        """DescribeGroups, one request per coordinator; member blobs stay raw bytes."""
        from kafka.protocol.admin import DescribeGroupsRequest  # noqa: PLC0415

        def request(groups: Sequence[str]) -> Any:
            return DescribeGroupsRequest(groups=list(groups), include_authorized_operations=False)

        def parse(coordinator: int, response: Any) -> list[DescribedGroup]:
            described = []
            for g in response.groups:
                if g.error_code in _COORDINATOR_MOVED:
                    self.forget_coordinator(g.group_id)
                described.append(
                    DescribedGroup(
                        group_id=g.group_id,
                        error_code=g.error_code,
                        error_message=getattr(g, "error_message", None),
                        state=g.group_state or "",
                        protocol_type=g.protocol_type or "",
                        protocol=g.protocol_data or "",
                        members=tuple(
                            RawMember(
                                member_id=m.member_id,
                                client_id=m.client_id,
                                client_host=m.client_host,
                                group_instance_id=getattr(m, "group_instance_id", None),
                                metadata=bytes(m.member_metadata or b""),
                                assignment=bytes(m.member_assignment or b""),
                            )
                            for m in g.members
                        ),
                        coordinator_id=coordinator,
                    )
                )
            return described

        return self._per_coordinator("describe_groups", by_coordinator, request, parse)

    def describe_consumer_groups(
        self, by_coordinator: Mapping[int, Sequence[str]]
    ) -> tuple[list[ConsumerGroupDescription], list[FailedRequest]]:
        """ConsumerGroupDescribe (KIP-848 groups), one request per coordinator."""
        from agent.collect.protocol import ConsumerGroupDescribeRequest  # noqa: PLC0415

        return self._describe_typed(
            "consumer_group_describe", ConsumerGroupDescribeRequest, by_coordinator, _consumer_group
        )

    def describe_streams_groups(
        self, by_coordinator: Mapping[int, Sequence[str]]
    ) -> tuple[list[StreamsGroupDescription], list[FailedRequest]]:
        """StreamsGroupDescribe (KIP-1071 groups), one request per coordinator."""
        from agent.collect.protocol import StreamsGroupDescribeRequest  # noqa: PLC0415

        return self._describe_typed(
            "streams_group_describe", StreamsGroupDescribeRequest, by_coordinator, _streams_group
        )

    def _describe_typed(
        self,
        stage: str,
        request_type: Any,
        by_coordinator: Mapping[int, Sequence[str]],
        convert: Callable[[Any, int], T],
    ) -> tuple[list[T], list[FailedRequest]]:
        """The describe APIs of the newer group types share a shape: group ids in, one
        answer per group out (``convert`` reads one, given its coordinator)."""

        def request(groups: Sequence[str]) -> Any:
            return request_type(group_ids=list(groups), include_authorized_operations=False)

        def parse(coordinator: int, response: Any) -> list[T]:
            for g in response.groups:
                if g.error_code in _COORDINATOR_MOVED:
                    self.forget_coordinator(g.group_id)
            return [convert(g, coordinator) for g in response.groups]

        return self._per_coordinator(stage, by_coordinator, request, parse)

    def offset_fetch(
        self, by_coordinator: Mapping[int, Sequence[str]]
    ) -> tuple[list[GroupOffsets], list[FailedRequest]]:
        """Committed offsets of many groups in one OffsetFetch (v8+) per coordinator."""
        from agent.collect.protocol import OffsetFetchAnswer, OffsetFetchRequest  # noqa: PLC0415

        def parse(_coordinator: int, response: OffsetFetchAnswer) -> list[GroupOffsets]:
            for g in response.groups:
                if g.error_code in _COORDINATOR_MOVED:
                    self.forget_coordinator(g.group_id)
            return response.groups

        return self._per_coordinator("offset_fetch", by_coordinator, OffsetFetchRequest, parse)

    def _per_coordinator(
        self,
        stage: str,
        by_coordinator: Mapping[int, Sequence[str]],
        request: Callable[[Sequence[str]], Any],
        parse: Callable[[int, Any], list[T]],
    ) -> tuple[list[T], list[FailedRequest]]:
        async def run() -> tuple[list[T], list[FailedRequest]]:
            manager = self._admin._manager
            pending = [
                (coordinator, groups, manager.send(request(groups), node_id=coordinator))
                for coordinator, groups in by_coordinator.items()
                if groups
            ]
            results: list[T] = []
            failures: list[FailedRequest] = []
            for coordinator, groups, future in pending:
                try:
                    results.extend(parse(coordinator, await future))
                except Exception as e:  # noqa: BLE001 - one coordinator's failure must not stop the poll
                    name, text, retriable = describe_exception(e)
                    failures.append(FailedRequest(stage, name, text, retriable, tuple(groups)))
                    for group in groups:
                        self.forget_coordinator(group)
            return results, failures

        return self._run(run)

    # -- topics and partitions ----------------------------------------------

    def topic_metadata(self, topics: Sequence[str] | None) -> list[TopicMetadata]:
        """Metadata for ``topics`` (all topics when None); never auto-creates a topic."""
        from kafka.protocol.metadata import MetadataRequest  # noqa: PLC0415

        async def run() -> Any:
            names = (
                None
                if topics is None
                else [MetadataRequest.MetadataRequestTopic(name=t) for t in topics]
            )
            request = MetadataRequest(topics=names, allow_auto_topic_creation=False)
            return await self._admin._manager.send(request)

        response = self._run(run)
        found = []
        for t in response.topics:
            leaders = [-1] * len(t.partitions)
            replicas: list[tuple[int, ...]] = [()] * len(t.partitions)
            for p in t.partitions:
                if 0 <= p.partition_index < len(leaders):
                    leaders[p.partition_index] = p.leader_id
                    replicas[p.partition_index] = tuple(p.replica_nodes or ())
            found.append(
                TopicMetadata(
                    t.name, t.error_code, bool(t.is_internal), tuple(leaders), tuple(replicas)
                )
            )
        return found

    def list_offsets(
        self, by_leader: Mapping[int, Sequence[tuple[str, int]]], timestamp: int
    ) -> tuple[list[PartitionOffset], list[FailedRequest]]:
        """Latest (-1) or earliest (-2) offsets: one ListOffsets per partition leader."""
        stage = "list_offsets_latest" if timestamp == LATEST else "list_offsets_earliest"
        timed = {
            leader: [(topic, partition, timestamp) for topic, partition in partitions]
            for leader, partitions in by_leader.items()
        }

        def answer(
            topic: str, partition: int, error_code: int, _at: int, offset: int
        ) -> PartitionOffset:
            if error_code:
                return PartitionOffset(topic, partition, None, error_code)
            return PartitionOffset(topic, partition, offset)

        return self._list_offsets(stage, timed, answer)

    def offsets_for_times(
        self, by_leader: Mapping[int, Sequence[tuple[str, int, int]]]
    ) -> tuple[list[TimedOffset], list[FailedRequest]]:
        """ListOffsets by time, one per partition leader: for each (topic, partition,
        Unix milliseconds), the first offset whose record time is at or after it
        (-1: none is) and that record's time (-1: none)."""

        def answer(
            topic: str, partition: int, error_code: int, at: int, offset: int
        ) -> TimedOffset:
            if error_code:
                return TimedOffset(topic, partition, None, -1, error_code)
            return TimedOffset(topic, partition, offset, at)

        return self._list_offsets("list_offsets_by_time", by_leader, answer)

    def _list_offsets(
        self,
        stage: str,
        by_leader: Mapping[int, Sequence[tuple[str, int, int]]],
        answer: Callable[[str, int, int, int, int], T],
    ) -> tuple[list[T], list[FailedRequest]]:
        """``answer`` makes a result of (topic, partition, error code, timestamp, offset)."""
        from agent.collect.protocol import ListOffsetsAnswer, ListOffsetsRequest  # noqa: PLC0415

        async def run() -> tuple[list[T], list[FailedRequest]]:
            manager = self._admin._manager
            pending = []
            for leader, partitions in by_leader.items():
                by_topic: dict[str, list[tuple[int, int]]] = {}
                for topic, partition, timestamp in partitions:
                    by_topic.setdefault(topic, []).append((partition, timestamp))
                request = ListOffsetsRequest(list(by_topic.items()), answer)
                pending.append((leader, manager.send(request, node_id=leader)))
            results: list[T] = []
            failures: list[FailedRequest] = []
            for leader, future in pending:
                try:
                    response: ListOffsetsAnswer[T] = await future
                except Exception as e:  # noqa: BLE001 - one leader's failure must not stop the poll
                    name, text, retriable = describe_exception(e)
                    failures.append(
                        FailedRequest(stage, name, f"broker {leader}: {text}", retriable)
                    )
                    continue
                results.extend(response.partitions)
            return results, failures

        return self._run(run)

    def describe_configs(
        self, topics: Sequence[str], broker_id: int | None
    ) -> tuple[dict[str, TopicConfig], int | None]:
        """Topic configs that matter to ksmon, and the broker's ``message.max.bytes``."""
        from kafka.protocol.admin import DescribeConfigsRequest  # noqa: PLC0415

        resource = DescribeConfigsRequest.DescribeConfigsResource
        keys = ["cleanup.policy", "retention.ms", "max.message.bytes"]

        async def run() -> Any:
            resources = [
                resource(resource_type=_TOPIC_RESOURCE, resource_name=t, configuration_keys=keys)
                for t in topics
            ]
            if broker_id is not None:
                resources.append(
                    resource(
                        resource_type=_BROKER_RESOURCE,
                        resource_name=str(broker_id),
                        configuration_keys=["message.max.bytes"],
                    )
                )
            request = DescribeConfigsRequest(
                resources=resources, include_synonyms=False, include_documentation=False
            )
            # Broker-level configs must be asked of that broker itself.
            return await self._admin._manager.send(request, node_id=broker_id)

        response = self._run(run)
        configs: dict[str, TopicConfig] = {}
        message_max_bytes: int | None = None
        for result in response.results:
            if result.error_code:
                continue
            values = {c.name: c.value for c in result.configs}
            if result.resource_type == _BROKER_RESOURCE:
                message_max_bytes = _int_or_none(values.get("message.max.bytes"))
            else:
                configs[result.resource_name] = TopicConfig(
                    name=result.resource_name,
                    cleanup_policy=values.get("cleanup.policy"),
                    retention_ms=_int_or_none(values.get("retention.ms")),
                    max_message_bytes=_int_or_none(values.get("max.message.bytes")),
                )
        return configs, message_max_bytes

    def log_dir_sizes(self, topics: Sequence[str]) -> tuple[dict[str, int], list[FailedRequest]]:
        """Bytes on disk per topic, summed over partitions, replicas and log dirs."""
        from kafka.protocol.admin import DescribeLogDirsRequest  # noqa: PLC0415

        topic_request = DescribeLogDirsRequest.DescribableLogDirTopic

        async def run() -> tuple[dict[str, int], list[FailedRequest]]:
            manager = self._admin._manager
            wanted = [
                topic_request(topic=t, partitions=list(range(_MAX_PARTITIONS))) for t in topics
            ]
            pending = [
                (broker, manager.send(DescribeLogDirsRequest(topics=wanted), node_id=broker))
                for broker in self.broker_ids()
            ]
            sizes: Counter[str] = Counter()
            failures: list[FailedRequest] = []
            for broker, future in pending:
                try:
                    response = await future
                except Exception as e:  # noqa: BLE001
                    name, text, retriable = describe_exception(e)
                    failures.append(
                        FailedRequest("log_dirs", name, f"broker {broker}: {text}", retriable)
                    )
                    continue
                for result in response.results:
                    for t in result.topics:
                        sizes[t.name] += sum(p.partition_size for p in t.partitions)
            return dict(sizes), failures

        return self._run(run)


# DescribeLogDirs asks per partition; asking for more than exist is harmless and
# saves a metadata lookup. Topics with more partitions are rare and get a partial size.
_MAX_PARTITIONS = 1024


class _BootstrapFailures(logging.Handler):
    """Keeps the last bootstrap connection error per kafka-python IO thread.

    kafka-python retries a refused login or an untrusted certificate until the
    bootstrap timeout and then reports only "Unable to bootstrap"; the real
    reason exists only as the argument of a log record on the client's own IO
    thread. Records are taken here, not printed: ksmon reports the reason itself.
    """

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.errors: dict[int, list[BaseException]] = {}

    def emit(self, record: logging.LogRecord) -> None:
        args = record.args if isinstance(record.args, tuple) else ()
        if str(record.msg).startswith("Bootstrap connection") and len(args) > 1:
            error = args[1]
            if isinstance(error, BaseException) and record.thread is not None:
                seen = self.errors.setdefault(record.thread, [])
                seen.append(error)
                del seen[:-32]


_bootstrap_failures = _BootstrapFailures()
_manager_log = logging.getLogger("kafka.net.manager")
_manager_log.addHandler(_bootstrap_failures)
_manager_log.setLevel(logging.WARNING)
_manager_log.propagate = False


def _io_thread_ident(client: Any) -> int | None:
    thread = getattr(getattr(getattr(client, "_manager", None), "_net", None), "_io_thread", None)
    return getattr(thread, "ident", None)


# Why a bootstrap failed, from the connection errors it met: (words in the error, explanation).
# The first rule any error matches wins, so the most specific rules come first.
_BOOTSTRAP_REASONS = (
    (
        ("sasl", "authentic"),
        "authentication failed ({error}); check the SASL mechanism and its credentials",
    ),
    (
        ("hostname mismatch", "ip address mismatch"),
        "TLS handshake failed: the broker's certificate does not name the host connected to "
        "({error}); connect by a name or address the certificate holds, or fix the certificate",
    ),
    (
        ("certificate verify failed",),
        "TLS handshake failed: the broker's certificate is not trusted ({error}); "
        "tls.ca_file must hold the CA that signed it",
    ),
    (
        ("ssl", "certificate", "handshake"),
        "TLS handshake failed ({error}); check the CA file and the broker's certificate",
    ),
)


def _bootstrap_failure(clients: list[Any], *, sasl: bool = False) -> str | None:
    """Why bootstrap failed, when a login or certificate was refused; None otherwise."""
    for client in clients:
        ident = _io_thread_ident(client)
        errors = _bootstrap_failures.errors.pop(ident, []) if ident is not None else []
        described = [describe_exception(e)[:2] for e in errors]
        if described:
            return _explain(described, sasl=sasl)
    return None


def _explain(described: list[tuple[str, str]], *, sasl: bool) -> str:
    for needles, explanation in _BOOTSTRAP_REASONS:
        for name, text in described:
            if any(needle in f"{name} {text}".lower() for needle in needles):
                return explanation.format(error=f"{name}: {text}")
    name, text = described[-1]
    disconnects = [(n, t) for n, t in described if t == "socket disconnected"]
    timeouts = [n for n, _ in described if "TimedOut" in n or "Timeout" in n]
    if sasl and disconnects and len(disconnects) + len(timeouts) == len(described):
        # The broker answers a refused login and closes the connection right
        # after; kafka-python drops the answer when both arrive in one read.
        # agent/kafka_python_fixes prevents that; should it not apply (another
        # kafka-python), a close right after every login is all there is to see.
        name, text = disconnects[-1]
        return (
            f"cannot connect: {name}: {text}: the broker closed every connection during "
            "login, which with SASL usually means refused credentials; check the SASL "
            "mechanism and its credentials"
        )
    return f"cannot connect: {name}: {text}"


def _discard(clients: list[Any]) -> None:
    """Stop what a failed KafkaAdminClient construction leaves running (its IO thread)."""
    for client in clients:
        try:
            client.close()
            net = getattr(getattr(client, "_manager", None), "_net", None)
            if net is not None:
                net.stop()
        except Exception as e:  # noqa: BLE001 - best effort on a client that never worked
            log.debug("discarding a failed client: %s", e)


def _int_or_none(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _consumer_group(g: Any, coordinator: int) -> ConsumerGroupDescription:
    return ConsumerGroupDescription(
        group_id=g.group_id,
        error_code=g.error_code,
        error_message=g.error_message,
        state=g.group_state or "",
        group_epoch=g.group_epoch,
        assignment_epoch=g.assignment_epoch,
        assignor=g.assignor_name or "",
        members=tuple(
            ConsumerGroupMember(
                member_id=m.member_id,
                client_id=m.client_id,
                client_host=m.client_host,
                group_instance_id=m.instance_id,
                rack_id=m.rack_id,
                member_epoch=m.member_epoch,
                subscribed_topics=tuple(m.subscribed_topic_names or ()),
                assigned=tuple(
                    (tp.topic_name, p)
                    for tp in m.assignment.topic_partitions
                    for p in tp.partitions
                ),
            )
            for m in g.members
        ),
        coordinator_id=coordinator,
    )


def _streams_group(g: Any, coordinator: int) -> StreamsGroupDescription:
    topology = g.topology
    subtopologies = (
        None
        if topology is None or topology.subtopologies is None
        else tuple(
            Subtopology(
                subtopology_id=s.subtopology_id,
                source_topics=tuple(s.source_topics),
                repartition_source_topics=tuple(t.name for t in s.repartition_source_topics),
                repartition_sink_topics=tuple(s.repartition_sink_topics),
                changelog_topics=tuple(t.name for t in s.state_changelog_topics),
            )
            for s in topology.subtopologies
        )
    )
    return StreamsGroupDescription(
        group_id=g.group_id,
        error_code=g.error_code,
        error_message=g.error_message,
        state=g.group_state or "",
        group_epoch=g.group_epoch,
        assignment_epoch=g.assignment_epoch,
        topology_epoch=topology.epoch if topology is not None else None,
        subtopologies=subtopologies,
        members=tuple(_streams_member(m) for m in g.members),
        coordinator_id=coordinator,
    )


def _streams_member(m: Any) -> StreamsGroupMember:
    def tasks(sets: Any) -> tuple[StreamsTaskSet, ...]:
        return tuple(StreamsTaskSet(t.subtopology_id, tuple(t.partitions)) for t in sets)

    endpoint = m.user_endpoint
    return StreamsGroupMember(
        member_id=m.member_id,
        client_id=m.client_id,
        client_host=m.client_host,
        group_instance_id=m.instance_id,
        rack_id=m.rack_id,
        member_epoch=m.member_epoch,
        process_id=m.process_id,
        endpoint=f"{endpoint.host}:{endpoint.port}" if endpoint is not None else None,
        client_tags=tuple((t.key, t.value) for t in m.client_tags),
        active=tasks(m.assignment.active_tasks),
        standby=tasks(m.assignment.standby_tasks),
        warmup=tasks(m.assignment.warmup_tasks),
    )
