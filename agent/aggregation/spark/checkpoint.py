"""The job's checkpoint directory: what lives where, and what it was made with.

* ``stream/``: Spark's streaming checkpoint: the source's offsets per batch and
  the stateful operator's state (RocksDB, a changelog per batch);
* ``ledger/``: per batch, its finding events and the board after it, and
  ``published.json``;
* ``quarantine/``: samples of snapshots set aside, with the reason;
* ``layout.json``: the buckets and shuffle partitions the state is keyed by,
  and how a bucket's key is made.

The state is keyed by a bucket of groups and spread over the shuffle
partitions, so both are fixed once the directory exists: a job started with
others says so and what to do, instead of reading its state wrongly.

A bucket's key: since layout 3 one that puts the bucket in the partition of
its choosing (``partitioning.spread_keys``); directories made before keep
the bucket's number as its key, and the job carries their state on that way.
"""

import json
import logging
from pathlib import Path

from agent.aggregation.spark.partitioning import spread_keys
from agent.config.schema import AggregationConfig
from agent.errors import ConfigError
from agent.model.findings import Finding
from agent.model.records import from_plain
from agent.paths import state_dir

log = logging.getLogger(__name__)

# 1: the history tables of ksmon before the stateful job; 2: keyed by the bucket's number;
# 3: keyed by ``spread_keys``.
LAYOUT = 3
_SPREAD = "spread"
_EARLIER = ("history", "spark", "state")
_EARLIER_CLOSED = "earlier-findings-closed"


def checkpoint_dir(aggregation: AggregationConfig) -> Path:
    return aggregation.checkpoint_dir or state_dir() / "aggregate"


class Checkpoint:
    def __init__(self, directory: Path, *, buckets: int, partitions: int) -> None:
        self.directory = directory
        self.buckets = buckets
        self.partitions = partitions
        self.stream = directory / "stream"
        self.ledger = directory / "ledger"
        self.quarantine = directory / "quarantine"
        self._layout = directory / "layout.json"
        # Each bucket's key in the stateful operator, known once ``prepare`` has run.
        self.keys: tuple[int, ...] = tuple(range(buckets))

    def prepare(self) -> None:
        """Check the directory was made for this job's keying (or make it so)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        wanted = {
            "layout": LAYOUT,
            "buckets": self.buckets,
            "partitions": self.partitions,
            "keys": _SPREAD,
        }
        if self._layout.is_file():
            made = json.loads(self._layout.read_text())
            if made.get("buckets") != self.buckets or made.get("partitions") != self.partitions:
                raise ConfigError(
                    f"aggregation.checkpoint_dir {self.directory}: its state is keyed by "
                    f"{made.get('buckets')} buckets over {made.get('partitions')} shuffle "
                    f"partitions, not {self.buckets} over {self.partitions}: set "
                    f"aggregation.buckets: {made.get('buckets')} and "
                    f"aggregation.spark.shuffle_partitions: {made.get('partitions')}, or "
                    f"delete {self.stream} and {self.ledger} to start over (that loses every "
                    "group's look-back, and the findings open now are found again within "
                    "their rules' look-back)"
                )
            if made.get("keys") == _SPREAD:
                self.keys = spread_keys(self.buckets, self.partitions)
            else:
                log.info(
                    "aggregation.checkpoint_dir %s: its state is keyed by bucket number, as "
                    "ksmon did before layout %d; kept so (a new checkpoint directory would "
                    "spread the buckets evenly over the partitions)",
                    self.directory,
                    LAYOUT,
                )
        elif self.stream.exists():
            raise ConfigError(
                f"aggregation.checkpoint_dir {self.directory}: {self.stream} exists without "
                f"{self._layout.name}; delete {self.stream} and {self.ledger} to start over"
            )
        else:
            self._layout.write_text(json.dumps(wanted))
            self.keys = spread_keys(self.buckets, self.partitions)

    def earlier_open_findings(self) -> list[Finding]:
        """What a job of the earlier layout (ksmon before the stateful job) left open, once:
        this job cannot carry its hysteresis, so it closes them on the findings topic."""
        earlier = [self.directory / name for name in _EARLIER if (self.directory / name).exists()]
        if not earlier or (self.directory / _EARLIER_CLOSED).exists():
            return []
        files = sorted((self.directory / "state").glob("batch-*.json"))
        if not files:
            return []
        plain = json.loads(files[-1].read_text())
        return [from_plain(Finding, f) for f in plain.get("state", {}).get("open", [])]

    def earlier_handled(self) -> None:
        earlier = [name for name in _EARLIER if (self.directory / name).exists()]
        if not earlier or (self.directory / _EARLIER_CLOSED).exists():
            return
        (self.directory / _EARLIER_CLOSED).write_text("")
        log.warning(
            "%s holds %s of an earlier ksmon's job, which this version does not read: "
            "delete them to free the space (nothing in them is needed any more)",
            self.directory,
            ", ".join(f"{name}/" for name in earlier),
        )
