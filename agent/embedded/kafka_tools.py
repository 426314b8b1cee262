"""Kafka's own command-line tools (``kafka-consumer-groups.sh`` and the rest), run from the
cached jars.

ksmon caches only Kafka's jars (``libs/``), not its ``bin/`` scripts; each script is a
one-line ``kafka-run-class.sh <main class> "$@"``, so this table of main classes is all
that is needed to run them. It is pinned to ``KAFKA_VERSION``: Kafka moves tools between
packages across releases (``ConsumerGroupCommand`` left ``kafka.admin`` in 3.7), and an
integration test checks that every class below is in the cached jars.
"""

import difflib
import os
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agent.errors import ConfigError

if TYPE_CHECKING:  # the table alone stays cheap to import: `ksmon --help` lists the tools
    from agent.embedded.kafka import KafkaDistribution

BOOTSTRAP_SERVER = "--bootstrap-server"


@dataclass(frozen=True)
class KafkaTool:
    """One of Kafka's ``bin/kafka-<name>.sh`` scripts."""

    name: str  # the script's name without ``kafka-`` and ``.sh``: ``consumer-groups``
    main_class: str
    purpose: str
    # The option naming the brokers to talk to, when the tool has one; None for tools
    # that read files or JMX (dump-log, storage, jmx).
    bootstrap_option: str | None = BOOTSTRAP_SERVER
    # True when the option belongs to the tool's subcommand, not to the tool.
    bootstrap_after_subcommand: bool = False

    @property
    def script(self) -> str:
        return f"kafka-{self.name}.sh"


KAFKA_TOOLS: tuple[KafkaTool, ...] = (
    KafkaTool("acls", "org.apache.kafka.tools.AclCommand", "list, add and remove ACLs"),
    KafkaTool(
        "broker-api-versions",
        "org.apache.kafka.tools.BrokerApiVersionsCommand",
        "the API versions each broker supports",
    ),
    KafkaTool(
        "client-metrics",
        "org.apache.kafka.tools.ClientMetricsCommand",
        "client metrics subscriptions (KIP-714)",
    ),
    KafkaTool(
        "cluster",
        "org.apache.kafka.tools.ClusterTool",
        "the cluster id; unregister a broker",
        bootstrap_after_subcommand=True,
    ),
    KafkaTool("configs", "kafka.admin.ConfigCommand", "describe and alter dynamic configs"),
    KafkaTool(
        "console-consumer",
        "org.apache.kafka.tools.consumer.ConsoleConsumer",
        "print a topic's records",
    ),
    KafkaTool(
        "console-producer", "org.apache.kafka.tools.ConsoleProducer", "send lines as records"
    ),
    KafkaTool(
        "console-share-consumer",
        "org.apache.kafka.tools.consumer.ConsoleShareConsumer",
        "print records through a share group",
    ),
    KafkaTool(
        "consumer-groups",
        "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
        "list, describe, reset offsets of and delete consumer groups",
    ),
    KafkaTool(
        "consumer-perf-test",
        "org.apache.kafka.tools.ConsumerPerformance",
        "measure consumer throughput",
    ),
    KafkaTool(
        "delegation-tokens",
        "org.apache.kafka.tools.DelegationTokenCommand",
        "create, renew and describe delegation tokens",
    ),
    KafkaTool(
        "delete-records",
        "org.apache.kafka.tools.DeleteRecordsCommand",
        "delete records up to an offset",
    ),
    KafkaTool(
        "dump-log",
        "org.apache.kafka.tools.DumpLogSegments",
        "print a log segment's or index's contents",
        bootstrap_option=None,
    ),
    KafkaTool(
        "e2e-latency",
        "org.apache.kafka.tools.EndToEndLatency",
        "measure produce-to-consume latency",
    ),
    KafkaTool("features", "org.apache.kafka.tools.FeatureCommand", "describe and set features"),
    KafkaTool(
        "get-offsets",
        "org.apache.kafka.tools.GetOffsetShell",
        "a topic's offsets (earliest, latest, by time)",
    ),
    KafkaTool("groups", "org.apache.kafka.tools.GroupsCommand", "list groups of every type"),
    KafkaTool(
        "jmx",
        "org.apache.kafka.tools.JmxTool",
        "read JMX metrics from a process",
        bootstrap_option=None,
    ),
    KafkaTool(
        "leader-election",
        "org.apache.kafka.tools.LeaderElectionCommand",
        "elect preferred or unclean leaders",
    ),
    KafkaTool("log-dirs", "org.apache.kafka.tools.LogDirsCommand", "log directories and sizes"),
    KafkaTool(
        "metadata-quorum",
        "org.apache.kafka.tools.MetadataQuorumCommand",
        "the KRaft quorum's status and replication",
    ),
    KafkaTool(
        "producer-perf-test",
        "org.apache.kafka.tools.ProducerPerformance",
        "measure producer throughput",
    ),
    KafkaTool(
        "reassign-partitions",
        "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
        "move partition replicas",
    ),
    KafkaTool(
        "replica-verification",
        "org.apache.kafka.tools.ReplicaVerificationTool",
        "check that replicas hold the same data; deprecated",
        bootstrap_option="--broker-list",
    ),
    KafkaTool(
        "share-consumer-perf-test",
        "org.apache.kafka.tools.ShareConsumerPerformance",
        "measure share consumer throughput",
    ),
    KafkaTool(
        "share-groups",
        "org.apache.kafka.tools.consumer.group.ShareGroupCommand",
        "list and describe share groups",
    ),
    KafkaTool(
        "storage",
        "kafka.tools.StorageTool",
        "format and inspect a KRaft node's storage",
        bootstrap_option=None,
    ),
    KafkaTool(
        "streams-application-reset",
        "org.apache.kafka.tools.StreamsResetter",
        "reset a Kafka Streams application to reprocess its input",
    ),
    KafkaTool(
        "streams-groups",
        "org.apache.kafka.tools.streams.StreamsGroupCommand",
        "list and describe streams groups (KIP-1071)",
    ),
    KafkaTool(
        "topics",
        "org.apache.kafka.tools.TopicCommand",
        "create, list, describe, alter and delete topics",
    ),
    KafkaTool(
        "transactions",
        "org.apache.kafka.tools.TransactionsCommand",
        "list, describe and abort transactions",
    ),
    KafkaTool(
        "verifiable-consumer",
        "org.apache.kafka.tools.VerifiableConsumer",
        "a consumer that reports its progress as JSON",
    ),
    KafkaTool(
        "verifiable-producer",
        "org.apache.kafka.tools.VerifiableProducer",
        "a producer that reports its progress as JSON",
    ),
    KafkaTool(
        "verifiable-share-consumer",
        "org.apache.kafka.tools.VerifiableShareConsumer",
        "a share consumer that reports its progress as JSON",
    ),
)

_BY_NAME = {tool.name: tool for tool in KAFKA_TOOLS}


def find_tool(name: str) -> KafkaTool:
    """The tool ``name`` names: ``consumer-groups``, or Kafka's own ``kafka-consumer-groups``
    or ``kafka-consumer-groups.sh``."""
    short = name.removesuffix(".sh").removeprefix("kafka-")
    tool = _BY_NAME.get(short)
    if tool is not None:
        return tool
    close = difflib.get_close_matches(short, _BY_NAME, n=1)
    hint = f"did you mean {close[0]}? " if close else ""
    raise ConfigError(f"unknown Kafka tool {name!r}; {hint}known tools: {', '.join(_BY_NAME)}")


def main_class(name: str) -> str:
    """The main class of the tool ``name`` (``consumer-groups``, say)."""
    return find_tool(name).main_class


def tools_listing() -> str:
    """One line per tool: its name, Kafka's script and what it is for."""
    width = max(len(tool.name) for tool in KAFKA_TOOLS)
    return "\n".join(
        f"{tool.name:<{width}}  {tool.purpose} ({tool.script})" for tool in KAFKA_TOOLS
    )


def names_bootstrap(args: Sequence[str]) -> bool:
    """True if ``args`` already say which brokers or controllers to talk to.

    Any ``--bootstrap...`` counts: jopt-simple, which most tools parse with, accepts
    abbreviations (``--bootstrap``) and ``--option=value``, and ``--bootstrap-controller``
    is the alternative some tools take.
    """
    return any(arg.startswith(("--bootstrap", "--broker-list")) for arg in args)


def asks_for_help(args: Sequence[str]) -> bool:
    return any(arg in {"-h", "--help", "--version"} for arg in args)


def lacks_bootstrap(tool: KafkaTool, args: Sequence[str]) -> bool:
    """True if ``tool`` talks to brokers but ``args`` do not say which (and do not
    only ask for help): then ksmon may name the local broker for them."""
    return tool.bootstrap_option is not None and not (names_bootstrap(args) or asks_for_help(args))


def with_bootstrap(tool: KafkaTool, args: Sequence[str], bootstrap: str) -> list[str]:
    """``args`` with ``tool``'s bootstrap option set to ``bootstrap``.

    It goes first, where argparse4j tools (features, metadata-quorum, transactions)
    want their global options, except for tools whose subcommand owns the option
    (``kafka-cluster.sh cluster-id --bootstrap-server ...``).
    """
    if tool.bootstrap_option is None:
        return list(args)
    option = [tool.bootstrap_option, bootstrap]
    if tool.bootstrap_after_subcommand and args and not args[0].startswith("-"):
        return [args[0], *option, *args[1:]]
    return [*option, *args]


def tool_argv(distribution: "KafkaDistribution", tool: KafkaTool, args: Sequence[str]) -> list[str]:
    """The ``java`` command line that runs ``tool`` with ``args``, as Kafka's script would.

    Like ``kafka-run-class.sh``, it honours ``KAFKA_HEAP_OPTS`` (default ``-Xmx256M``,
    the scripts' own for tools) and ``KAFKA_OPTS`` (a JAAS file for SASL, say); log
    lines go to stderr at WARN, so stdout is the tool's answer.
    """
    from agent.embedded.kafka import resource_path  # noqa: PLC0415 - see the imports

    heap = shlex.split(os.environ.get("KAFKA_HEAP_OPTS", "-Xmx256M"))
    extra = shlex.split(os.environ.get("KAFKA_OPTS", ""))
    jvm_options = [
        *heap,
        "-Djava.awt.headless=true",
        f"-Dlog4j2.configurationFile={resource_path('log4j2-tools.xml')}",
        *extra,
    ]
    return distribution.java_argv(tool.main_class, args, jvm_options=jvm_options)
