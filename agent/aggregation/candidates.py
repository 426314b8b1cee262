"""What a detector returns: candidate findings ("the rule holds now") in one shape.

A detector says, for each evaluation time, which subjects its rule holds
for, with evidence and an explanation; it also says at which evaluation
times it could judge at all (``coverage``: a rule on stream threads cannot
judge while the group rebalances and members come undecoded). Opening and
closing findings from that is hysteresis's job, not the detector's.
"""

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from agent.aggregation.rates import Rates
from agent.aggregation.tables import KEYS, Tables
from agent.config.schema import DetectorsConfig

CANDIDATE_COLUMNS = (
    *KEYS,
    "kind",
    "severity",
    "process",
    "thread",
    "task",
    "topic",
    "partition",
    "since",
    "explanation",
    "evidence",
)


@dataclass(frozen=True)
class Context:
    """Everything a detector reads: the tables (history included), rates, when to judge."""

    tables: Tables
    rates: Rates
    evaluations: DataFrame  # KEYS: the series and event times to evaluate at
    params: DetectorsConfig


@dataclass(frozen=True)
class Detection:
    kind: str
    candidates: DataFrame  # CANDIDATE_COLUMNS
    coverage: DataFrame  # KEYS at which the rule could be judged
    # A rule on cluster-wide facts, judged once per agent and poll: its rows are not
    # partitioned by group like every other rule's, and it names no tasks.
    cluster_level: bool = False


def candidates(
    rows: DataFrame,
    *,
    kind: str,
    severity: Column,
    explanation: Column,
    evidence: Column,
    since: Column | None = None,
    process: Column | None = None,
    thread: Column | None = None,
    task: Column | None = None,
    topic: Column | None = None,
    partition: Column | None = None,
) -> DataFrame:
    """Candidate rows in the one shape; ``evidence`` is a struct, stored as JSON text."""
    return rows.select(
        *KEYS,
        F.lit(kind).alias("kind"),
        severity.alias("severity"),
        _or_null(process, "string").alias("process"),
        _or_null(thread, "long").alias("thread"),
        _or_null(task, "string").alias("task"),
        _or_null(topic, "string").alias("topic"),
        _or_null(partition, "long").alias("partition"),
        (since if since is not None else F.col("t")).cast("double").alias("since"),
        explanation.alias("explanation"),
        # Keep nulls: "unknown" is evidence too.
        F.to_json(evidence, {"ignoreNullFields": "false"}).alias("evidence"),
    )


def _or_null(column: Column | None, kind: str) -> Column:
    return (column if column is not None else F.lit(None)).cast(kind)


def everywhere(evaluations: DataFrame) -> DataFrame:
    return evaluations.select(*KEYS)


def when_stable(tables: Tables, evaluations: DataFrame) -> DataFrame:
    """The evaluation times at which the group was Stable (members fully described)."""
    return (
        tables.groups.where(F.col("stable"))
        .select(*KEYS)
        .join(evaluations.select(*KEYS), list(KEYS), "left_semi")
    )


def rounded(column: Column | str, digits: int = 3) -> Column:
    return F.round(column if isinstance(column, Column) else F.col(column), digits)


def counted(count: Column, singular: str, plural: str | None = None) -> Column:
    """``1 thread``, ``2 threads``."""
    word = F.when(count == 1, F.lit(singular)).otherwise(F.lit(plural or f"{singular}s"))
    return F.concat(count.cast("string"), F.lit(" "), word)


def thread_name(member: Column) -> Column:
    """``thread 2 of instance <process>`` for a stream thread, else ``member <client id>``
    (``member``: a struct with ``thread``, ``process`` and ``client_id``)."""
    return F.when(
        member["thread"].isNotNull() & member["process"].isNotNull(),
        F.format_string("thread %d of instance %s", member["thread"], member["process"]),
    ).otherwise(F.format_string("member %s", member["client_id"]))
