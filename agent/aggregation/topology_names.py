"""Findings that name tasks also name their sub-topologies: what each reads, its stores.

A task id says only ``<sub-topology>_<partition>``; a person on call needs the
topics and stores behind it. Where the evaluated snapshot carries the group's
sub-topologies (a KIP-1071 broker's topology, or the application's configured
``Topology#describe()`` text), every candidate that mentions a task, as its
subject or in its evidence, gets them: in the evidence as ``subtopology_names``
(id, origin, topics read, stores, processors) and, shortly, in the explanation.
Candidates of groups without a known topology are left exactly as they were.
"""

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from agent.aggregation.tables import KEYS

# Task ids inside the evidence JSON: a quoted "<sub-topology>_<partition>" value.
_TASK_IN_EVIDENCE = r'"(\d+)_\d+"'


def subtopology_names(subtopologies: DataFrame) -> DataFrame:
    """Per snapshot (KEYS), a map from sub-topology id to what names it
    (``subtopologies``: the table of that name)."""
    info = F.struct(
        F.col("subtopology_id").alias("id"),
        "origin",
        "reads",
        "stores",
        "processors",
    )
    return subtopologies.groupBy(*KEYS).agg(
        F.map_from_entries(F.collect_list(F.struct(F.col("subtopology_id"), info))).alias("_names")
    )


def with_subtopology_names(candidates: DataFrame, names: DataFrame) -> DataFrame:
    """``candidates`` (CANDIDATE_COLUMNS) with their tasks' sub-topologies named."""
    ids = F.array_distinct(
        F.concat(
            F.when(
                F.col("task").isNotNull(),
                F.array(F.regexp_extract(F.col("task"), r"^(\d+)_", 1)),
            ).otherwise(F.array()),
            F.coalesce(
                F.regexp_extract_all(F.col("evidence"), F.lit(_TASK_IN_EVIDENCE), 1), F.array()
            ),
        )
    )
    # In sub-topology order (numeric: "10" after "2").
    in_order = F.transform(F.array_sort(F.transform(ids, lambda i: i.cast("int"))), _as_text)
    named = F.filter(
        F.transform(in_order, lambda i: F.element_at(F.col("_names"), i)),
        lambda s: s.isNotNull(),
    )
    joined = candidates.join(names, list(KEYS), "left").withColumn(
        "_named", F.when(F.col("_names").isNotNull(), named).otherwise(F.array())
    )
    has_names = F.size("_named") > 0
    rewritten = {
        "explanation": _explained(F.col("explanation"), F.col("_named")),
        "evidence": _with_evidence(F.col("evidence"), F.col("_named")),
    }
    return joined.select(
        *[
            F.when(has_names, rewritten[c]).otherwise(F.col(c)).alias(c)
            if c in rewritten
            else F.col(c)
            for c in candidates.columns
        ]
    )


def _as_text(i: Column) -> Column:
    return i.cast("string")


def _with_evidence(evidence: Column, named: Column) -> Column:
    """The evidence JSON object with a ``subtopology_names`` member added at its end.

    Detectors write different evidence structs, so the member is spliced into the
    text rather than parsed into one schema; every evidence is a JSON object."""
    return F.concat(
        evidence.substr(F.lit(1), F.length(evidence) - 1),
        F.when(evidence == F.lit("{}"), F.lit("")).otherwise(F.lit(",")),
        F.lit('"subtopology_names":'),
        F.to_json(named),
        F.lit("}"),
    )


def _explained(explanation: Column, named: Column) -> Column:
    """``<explanation> (sub-topology 1 reads app-x-repartition, stores counts; ...)``."""
    return F.concat(
        explanation, F.lit(" ("), F.array_join(F.transform(named, _one_named), "; "), F.lit(")")
    )


def _one_named(s: Column) -> Column:
    """``sub-topology 1 reads app-x-repartition, stores counts``."""
    return F.concat(
        F.lit("sub-topology "),
        s["id"],
        F.when(
            F.size(s["reads"]) > 0, F.concat(F.lit(" reads "), F.array_join(s["reads"], ", "))
        ).otherwise(F.lit("")),
        F.when(
            F.size(s["stores"]) > 0,
            F.concat(F.lit(", stores "), F.array_join(s["stores"], ", ")),
        ).otherwise(F.lit("")),
    )
