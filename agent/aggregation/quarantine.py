"""Snapshots the job cannot trust, set aside with the reason, never fatal.

The count of every rejected record goes to ``ksmon_job_snapshots_quarantined_total``;
a sample (the first ``SAMPLE`` of each batch) is written as JSON lines, with
the reader's own error message naming the field, for a person to look at.
"""

import json
from pathlib import Path

from pyspark.sql import DataFrame

from agent.model.records import RecordError
from agent.model.snapshot import Snapshot

SAMPLE = 200
MAX_VALUE_CHARS = 65_536
KEEP_FILES = 1000


def explain(value: str) -> str:
    """Why a snapshot was refused, in the model reader's words."""
    try:
        Snapshot.from_json(value)
    except RecordError as e:
        return str(e)
    return "a field does not fit the snapshot schema"


def write_quarantined(quarantined: DataFrame, directory: Path, name: str) -> Path:
    rows = quarantined.limit(SAMPLE).collect()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.jsonl"
    with path.open("w", encoding="utf-8") as out:
        for row in rows:
            value = row["value"] or ""
            record = {
                "reason": row["reason"],
                "origin": row["origin"],
                "error": explain(value),
                "value": value[:MAX_VALUE_CHARS],
            }
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    for old in sorted(directory.glob("*.jsonl"))[:-KEEP_FILES]:
        old.unlink(missing_ok=True)
    return path
