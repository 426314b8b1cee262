"""What every rule takes and returns: the evaluation of one poll, and its judgement.

A rule is a pure function ``judge(ev: Evaluation) -> Judgement``. It reads
the window of its series (``ev.window``: that agent's polls of the group, up
to the one judged), the thresholds (``ev.params``) and what other rules
share (rates and loads, computed once per evaluation), and says:

* ``found``: the subjects its rule holds for now, each with evidence and a
  one-line explanation (opening and closing findings from that is
  ``hysteresis``'s job, not the rule's);
* ``judged``: whether it could judge this poll at all (a rule on stream
  threads cannot while the group rebalances and members come undecoded):
  a rule that cannot judge neither holds nor fails, so it never closes a
  finding by itself;
* ``gauges``: values for /metrics (restore progress, rebalance counts, ...);
* ``cleared``: subjects whose open finding of its kind it sees positively over
  (not merely not holding now): hysteresis closes those at once.

A rule reads another rule's word (its judgement of this poll, or a finding of its
kind open) only where ``precedence.LEAVES_TO`` says it leaves something to it.

Rules never read a clock, never import pyspark, and sort whatever they list,
so the same polls always give the same findings (the job relies on it to
re-run a micro-batch after a crash).
"""

from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from functools import cached_property
from typing import NamedTuple, Protocol

from agent.aggregation.judging.facts import Poll
from agent.aggregation.judging.rules.precedence import check_leaves_to
from agent.aggregation.judging.rules.rates import Rates, compute_rates
from agent.aggregation.judging.window import SeriesWindow
from agent.config.schema import DetectorsConfig
from agent.model.findings import Finding, FindingSubject
from agent.model.records import JsonObject


@dataclass(frozen=True, slots=True)
class Found:
    """The rule holds now for ``subject``."""

    kind: str
    severity: str
    subject: FindingSubject
    explanation: str
    evidence: JsonObject
    since: float | None = None  # when the condition began; None: now


class Gauge(NamedTuple):
    """One value for /metrics; labels that do not apply are None. A NamedTuple: every
    group's gauges go from Spark's Python workers to the driver each micro-batch, and a
    tuple unpickles in C, where a slotted dataclass runs Python code per gauge (at a
    thousand groups, unpickling the workers' outputs was then a large share of the
    driver's time per batch)."""

    metric: str
    value: float
    process: str | None = None
    thread: int | None = None
    task: str | None = None
    topic: str | None = None
    partition: int | None = None
    source: str | None = None
    status: str | None = None  # consumer_status: which status a value is for
    # Several agents may watch a group: a configured value (0) wins over a guess (1).
    priority: int = 0


@dataclass(frozen=True, slots=True)
class Judgement:
    kind: str
    judged: bool
    found: tuple[Found, ...] = ()
    gauges: tuple[Gauge, ...] = ()
    # Subjects whose finding is over by positive evidence: closed now, not a window later.
    cleared: tuple[FindingSubject, ...] = ()


@dataclass
class Evaluation:
    """One poll being judged: its series' window, the thresholds, and what rules share."""

    window: SeriesWindow
    params: DetectorsConfig
    group: str  # the group id (explanations name it)
    # Earlier rules' judgements of this same poll, by kind: read through ``said``.
    judged: dict[str, Judgement] = field(default_factory=dict)
    # The group's findings open before this poll (every series'): what another rule
    # already told the person on call.
    open_findings: tuple[Finding, ...] = ()
    judging: str = ""  # the kind of the rule judging now

    def said(self, kind: str) -> Judgement | None:
        """What the rule of ``kind``, one the rule judging leaves something to, said of
        this poll (None: it has not judged it)."""
        check_leaves_to(self.judging, kind)
        return self.judged.get(kind)

    def is_open(self, kind: str, **subject: object) -> bool:
        """Whether a finding of ``kind`` (the rule judging's own, or one it leaves
        something to) is open on the group, or holds at this poll (a rule before this
        one found it), for a subject with these fields."""
        check_leaves_to(self.judging, kind)
        found = [f.subject for f in self.open_findings if f.kind == kind]
        judgement = self.judged.get(kind)
        if judgement is not None:
            found += [f.subject for f in judgement.found]
        return any(all(getattr(s, name) == value for name, value in subject.items()) for s in found)

    @property
    def now(self) -> Poll:
        return self.window.now

    @property
    def t(self) -> float:
        return self.window.t

    @cached_property
    def rates(self) -> Rates:
        return compute_rates(self.window, self.params.evaluation_window)


class Rule(Protocol):
    """A rule: a module with its finding's ``KIND`` and ``judge``."""

    KIND: str

    def judge(self, ev: Evaluation, /) -> Judgement: ...


def rounded(value: float | None, digits: int = 3) -> float | None:
    """A number for evidence, as findings show them: ``digits`` decimals, halves up
    (2.0005 -> 2.001, not Python's round-half-even on the binary value)."""
    if value is None or value != value or value in (float("inf"), float("-inf")):  # noqa: PLR0124
        return value
    return float(Decimal(repr(value)).quantize(_QUANTUM[digits], ROUND_HALF_UP))


_QUANTUM = {d: Decimal(1).scaleb(-d) for d in range(10)}


def counted(count: int, singular: str, plural: str | None = None) -> str:
    """``1 thread``, ``2 threads``."""
    return f"{count} {singular if count == 1 else (plural or singular + 's')}"


def thread_name(process: str | None, thread: int | None, client_id: str) -> str:
    """``thread 2 of instance <process>`` for a stream thread, else ``member <client id>``."""
    if process is not None and thread is not None:
        return f"thread {thread} of instance {process}"
    return f"member {client_id}"


def is_repartition(topic: str, kind: str | None) -> bool:
    """A repartition topic by the agent's classification (``Topic.internal_kind``), else
    by the name Kafka Streams gives them."""
    return kind == "repartition" if kind is not None else topic.endswith("-repartition")
