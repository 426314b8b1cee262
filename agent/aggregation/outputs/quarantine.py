"""Snapshots the job cannot trust, set aside with the reason, never fatal (no Spark).

Every rejected record is counted (``ksmon_job_snapshots_quarantined_total``);
a sample of each batch's (``bucket.REJECTED_SAMPLE`` per bucket) is written as
JSON lines, with the reader's own error naming the field, for a person to
look at.
"""

import json
from collections.abc import Sequence
from pathlib import Path

from agent.aggregation.judging.bucket import Rejected

MAX_VALUE_CHARS = 65_536
KEEP_FILES = 1000


def write_rejected(rejected: Sequence[Rejected], directory: Path, name: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.jsonl"
    with path.open("w", encoding="utf-8") as out:
        for r in rejected:
            record = {
                "reason": r.reason,
                "origin": r.origin,
                "error": r.error,
                "value": r.value[:MAX_VALUE_CHARS],
            }
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    for old in sorted(directory.glob("*.jsonl"))[:-KEEP_FILES]:
        old.unlink(missing_ok=True)
    return path
