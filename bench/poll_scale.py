"""Benchmark: one full poll of a cluster with 1,000 groups and 20,000 committed partitions.

Sets up a local broker (100 topics x 200 partitions, empty; each group commits
offset 0 for 20 partitions, so every partition has exactly one committed offset), then,
in a fresh process that holds nothing but the agent's poller, runs polls and
reports their duration, the Kafka requests they sent, and the process's peak
RSS. It polls with 100 and with 1,000 groups to show the request count does
not grow with the group count. Finally it times Kafka's own
``kafka-consumer-groups --describe --all-groups`` on the same cluster.

    .venv/bin/python bench/poll_scale.py            # prints a JSON report
    .venv/bin/python bench/poll_scale.py --groups 200 --topics 20   # smaller

The broker keeps one file open per partition (its active log segment; the
indexes are memory-mapped, not held open) plus about 400 of its own (jars,
sockets, ``__consumer_offsets``): 100 topics x 200 partitions need about 20,400
open files. The bench checks the limit first and says what it needs; where the
hard limit is lower, ``--topics 95`` (19,000 partitions; the last 50 groups
share partitions with the first) fits under 20,000.
"""

import argparse
import json
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PARTITIONS_PER_TOPIC = 200
PARTITIONS_PER_GROUP = 20
# Files a broker holds open besides one per partition (measured on Kafka 4.3.1: about
# 200 at start, plus __consumer_offsets' 50 partitions and client sockets), with room.
BROKER_OWN_FILES = 400


def check_open_files(partitions: int) -> None:
    """Raise the soft open-file limit to what the broker will need, or stop with a
    message saying what it needs (a broker past its limit dies with "Too many open
    files" in the middle of the setup)."""
    needed = partitions + BROKER_OWN_FILES
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < needed:
        fits = max(1, (hard - BROKER_OWN_FILES) // PARTITIONS_PER_TOPIC)
        raise SystemExit(
            f"the broker needs about {needed} open files ({partitions} partitions, one file "
            f"each, and {BROKER_OWN_FILES} of its own) but the hard limit is {hard}: raise it "
            f"(ulimit -Hn as root, or limits.conf) or run with --topics {fits} or fewer"
        )
    if soft != resource.RLIM_INFINITY and soft < needed:
        # The broker is our child: it inherits the raised limit.
        resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))


def group_name(index: int) -> str:
    return f"bench-group-{index:05d}"


def setup(bootstrap: str, groups: int, topics: int) -> None:
    from kafka import TopicPartition
    from kafka.admin import KafkaAdminClient
    from kafka.errors import KafkaError
    from kafka.structs import OffsetAndMetadata

    from agent.embedded.process import wait_until
    from agent.embedded.topics import create_topics

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=120_000)

    # Bring __consumer_offsets up first, while the broker is idle: with 20,000
    # new partitions to create it would take minutes to load its coordinators.
    create_topics(bootstrap, {"bench-warmup": 1})

    def warm_up() -> bool:
        try:
            admin.alter_group_offsets(
                "bench-warmup", {TopicPartition("bench-warmup", 0): OffsetAndMetadata(0, "", -1)}
            )
        except KafkaError as e:
            if e.retriable:
                return False
            raise
        return True

    wait_until(warm_up, timeout=120, what="the group coordinator", interval=0.5)
    names = [f"bench-topic-{t:03d}" for t in range(topics)]
    for start in range(0, topics, 10):
        create_topics(
            bootstrap, dict.fromkeys(names[start : start + 10], PARTITIONS_PER_TOPIC), timeout=300
        )
    groups_per_topic = PARTITIONS_PER_TOPIC // PARTITIONS_PER_GROUP

    last_error = [""]

    def commit(g: int) -> bool:
        """Commit group g's offsets; False (retry) while coordinators are still loading."""
        topic = names[(g // groups_per_topic) % topics]
        first = (g % groups_per_topic) * PARTITIONS_PER_GROUP
        try:
            results = admin.alter_group_offsets(
                group_name(g),
                {
                    TopicPartition(topic, p): OffsetAndMetadata(0, "", -1)
                    for p in range(first, first + PARTITIONS_PER_GROUP)
                },
            )
        except KafkaError as e:
            if e.retriable:
                last_error[0] = type(e).__name__
                return False
            raise
        errors = {tp: e for tp, e in results.items() if e.__name__ != "NoError"}
        last_error[0] = ",".join(sorted({e.__name__ for e in errors.values()}))
        if any(not e.retriable for e in errors.values()):
            raise RuntimeError(f"committing for {group_name(g)} failed: {errors}")
        return not errors

    # __consumer_offsets is created on first use; its coordinators take a moment to load.
    for g in range(groups):
        wait_until(
            lambda g=g: commit(g),
            timeout=300,
            what=f"a commit for {group_name(g)} (last error: {last_error[0]})",
            interval=0.5,
        )
    listed = sum(1 for x in admin.list_groups() if x["group_id"].startswith("bench-group-"))
    admin.close()
    if listed != groups:
        raise RuntimeError(f"expected {groups} groups, the broker lists {listed}")


def measure(bootstrap: str, groups: int, polls: int) -> dict[str, object]:
    """Runs in a child process: only the poller, so RSS is the agent's own."""
    from agent.collect.kafka_edge import KafkaEdge
    from agent.collect.poller import ClusterPoller, GroupFilter
    from agent.model import AgentInfo

    allow = re.compile(r"bench-group-0*(\d+)")

    class FirstN(GroupFilter):
        def wants(self, group_id: str) -> bool:
            match = allow.fullmatch(group_id)
            return match is not None and int(match.group(1)) < groups

    edge = KafkaEdge(
        {"bootstrap_servers": bootstrap, "client_id": "ksmon-bench", "request_timeout_ms": 60_000}
    )
    poller = ClusterPoller("bench", AgentInfo("bench", "0", "central"), edge, group_filter=FirstN())
    runs = []
    for _ in range(polls):
        result = poller.poll()
        assert result.ok, result.error
        runs.append(
            {
                "seconds": round(result.duration_seconds, 3),
                "groups": len(result.snapshots),
                "partitions": sum(len(s.partitions) for s in result.snapshots),
                "requests": dict(sorted(result.requests.items())),
                "snapshot_bytes": sum(len(s.to_json()) for s in result.snapshots),
            }
        )
    edge.close()
    return {
        "groups": groups,
        "first_poll": runs[0],
        "steady_polls": runs[1:],
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--groups", type=int, default=1000)
    parser.add_argument("--topics", type=int, default=100)
    parser.add_argument("--polls", type=int, default=4)
    parser.add_argument("--measure", help=argparse.SUPPRESS)  # child mode: bootstrap address
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, args.groups, args.polls)))
        return

    from agent.embedded.kafka import EmbeddedKafka, fetch_kafka
    from agent.embedded.streams_app import CONSUMER_GROUP_COMMAND_CLASS

    check_open_files(args.topics * PARTITIONS_PER_TOPIC)
    with tempfile.TemporaryDirectory(prefix="ksmon-bench-") as work:
        kafka = EmbeddedKafka(fetch_kafka(), Path(work) / "kafka", heap_mb=2048)
        kafka.start()
        try:
            started = time.monotonic()
            setup(kafka.bootstrap_servers, args.groups, args.topics)
            report: dict[str, object] = {"setup_seconds": round(time.monotonic() - started, 1)}
            for groups in sorted({max(1, args.groups // 10), args.groups}):
                child = subprocess.run(
                    [
                        sys.executable,
                        __file__,
                        "--measure",
                        kafka.bootstrap_servers,
                        "--groups",
                        str(groups),
                        "--polls",
                        str(args.polls),
                    ],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                report[f"poll_{groups}_groups"] = json.loads(child.stdout.strip().splitlines()[-1])
            started = time.monotonic()
            official = kafka.distribution.run_tool(
                CONSUMER_GROUP_COMMAND_CLASS,
                [
                    "--bootstrap-server",
                    kafka.bootstrap_servers,
                    "--describe",
                    "--all-groups",
                    "--timeout",
                    "600000",
                ],
                timeout=1800,
            )
            report["kafka_consumer_groups_describe_all_seconds"] = round(
                time.monotonic() - started, 2
            )
            report["kafka_consumer_groups_exit_code"] = official.returncode
            report["kafka_consumer_groups_stderr_tail"] = official.stderr.strip()[-300:]
            report["kafka_consumer_groups_rows"] = sum(
                1 for line in official.stdout.splitlines() if line.startswith("bench-group-")
            )
        finally:
            kafka.stop()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
