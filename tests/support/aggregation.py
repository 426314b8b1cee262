"""Helpers for the aggregation job's integration tests: configs, spool files, /metrics."""

import json
import os
import re
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pyspark.sql import SparkSession

from agent.aggregation.job import AggregationJob
from agent.aggregation.outputs.latest import JobView
from agent.config import Config, parse_config
from agent.embedded.kafka import EmbeddedKafka
from agent.embedded.ports import free_port
from agent.model import Snapshot

T = TypeVar("T")


def job_config(
    kafka: EmbeddedKafka,
    work: Path,
    *,
    findings_topic: str,
    spool: Path | None = None,
    snapshot_topic: str | None = None,
    detectors: dict[str, object] | None = None,
    max_files_per_batch: int = 100,
    trigger: str = "1s",
    task_loads_topic: str | None = None,
) -> Config:
    """A config for the job on the session broker: spool or topic input, its own port."""
    job_input: dict[str, object] = (
        {
            "type": "spool",
            "spool": {"directory": str(spool), "max_files_per_batch": max_files_per_batch},
        }
        if spool is not None
        else {"type": "kafka", "kafka": {"topic": snapshot_topic, "starting_offsets": "earliest"}}
    )
    document = {
        "clusters": [{"name": "local", "bootstrap_servers": [kafka.bootstrap_servers]}],
        "sink": {"type": "none"},
        "aggregation": {
            "listen": f"127.0.0.1:{free_port()}",
            "checkpoint_dir": str(work / "checkpoint"),
            "trigger_interval": trigger,
            "input": job_input,
            "findings": {"topic": findings_topic, "partitions": 1},
            **(
                {"task_loads": {"publish": True, "topic": task_loads_topic}}
                if task_loads_topic is not None
                else {}
            ),
            "spark": {"master": "local[2]", "shuffle_partitions": 2, "driver_memory": "512MiB"},
            "detectors": detectors or {},
        },
    }
    text = yaml.safe_dump(document, sort_keys=False)
    path = work / "ksmon.yaml"
    path.write_text(text)
    return parse_config(text, str(path), {})


def write_spool(directory: Path, files: Sequence[Iterable[Snapshot]]) -> list[Path]:
    """Complete spool files in order (the names sort by time, as the agent's do).

    Spark's file source takes files in the order of their modification times, and
    files written within the same instant come in the order the directory lists them:
    each file is dated a second after the one before, as an agent's rotations are."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    # After any file already there (a later call adds to the same spool).
    first = max([time.time() - len(files), *(p.stat().st_mtime for p in directory.glob("*"))])
    for i, snapshots in enumerate(files, start=1):
        path = directory / f"snapshots-20260101T000000-{i:06d}.jsonl"
        tmp = path.with_suffix(".part")
        tmp.write_bytes(b"".join(s.to_json() + b"\n" for s in snapshots))
        written = first + i
        os.utime(tmp, (written, written))
        tmp.replace(path)
        paths.append(path)
    return paths


def in_chunks(items: Sequence[T], parts: int) -> list[list[T]]:
    """``items`` in ``parts`` consecutive chunks of (nearly) equal size, in order."""
    size = -(-len(items) // parts)
    return [list(items[i * size : (i + 1) * size]) for i in range(parts)]


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        return str(response.read().decode())


def get_json(port: int, path: str) -> tuple[int, Any]:
    """The job's JSON API: the status and parsed body of ``GET path``, errors included."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def active_findings(metrics: str) -> list[dict[str, str]]:
    """The label sets of ``ksmon_finding_active`` series in a scrape."""
    found = []
    for line in metrics.splitlines():
        if line.startswith("ksmon_finding_active{"):
            found.append(dict(re.findall(r'([a-z_]+)="([^"]*)"', line)))
    return found


def run_job_until_caught_up(config: Config, spark: SparkSession) -> JobView:
    """Start the job in this process, let it process everything available, stop it;
    what its /metrics served at the end."""
    job = AggregationJob(config, spark)
    job.start()
    try:
        job.process_available()
        return job.latest.view()
    finally:
        job.stop()


def kafka_job_settings(port: int, checkpoint: Path, topic: str, findings_topic: str) -> str:
    """The YAML after a config's clusters for a ``ksmon aggregate`` process that reads
    ``topic`` from its start and publishes to ``findings_topic``, on local[2]."""
    return yaml.safe_dump(
        {
            "logging": {"format": "json", "level": "info"},
            "sink": {"type": "none"},
            "aggregation": {
                "listen": f"127.0.0.1:{port}",
                "checkpoint_dir": str(checkpoint),
                "trigger_interval": "1s",
                "input": {
                    "type": "kafka",
                    "kafka": {"topic": topic, "starting_offsets": "earliest"},
                },
                "findings": {"topic": findings_topic, "partitions": 1},
                "spark": {"master": "local[2]", "shuffle_partitions": 2},
            },
        },
        sort_keys=False,
    )
