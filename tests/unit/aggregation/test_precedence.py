"""The one table of which rule leaves what to which (``rules.precedence``): every rule
in it runs after those it leaves something to, reading any other rule's word is
refused, and every pair in the table is one a rule really asks for."""

import pytest

from agent.aggregation.judging.facts import decode
from agent.aggregation.judging.rules import GROUP_RULES, base
from agent.aggregation.judging.rules.base import Evaluation
from agent.aggregation.judging.rules.precedence import (
    LEAVES_TO,
    PrecedenceError,
    check_leaves_to,
)
from agent.aggregation.judging.window import SeriesWindow
from agent.aggregation.replay import replay
from agent.config import load_config
from agent.config.schema import DetectorsConfig
from tests.support.live_scenarios import PROBLEMS, RECORDINGS, RECOVERIES, REPLAY_CONFIG
from tests.support.snapshots import snapshot
from tests.unit.aggregation.conftest import ALL_CASES, run_cases

ORDER = [rule.KIND for rule in GROUP_RULES]


@pytest.mark.parametrize("rule", sorted(LEAVES_TO))
def test_a_rule_runs_after_every_rule_it_leaves_something_to(rule: str) -> None:
    assert rule in ORDER, "a rule of GROUP_RULES"
    for other in LEAVES_TO[rule]:
        assert other in ORDER, f"{other}: a rule of GROUP_RULES"
        assert ORDER.index(other) < ORDER.index(rule), f"{rule} judged before {other}"


def test_a_rule_may_read_its_own_kind_and_those_it_leaves_to_but_no_other() -> None:
    check_leaves_to("no_live_consumers", "no_live_consumers")  # its own finding, open
    check_leaves_to("consumer_status", "restore_stalled")
    with pytest.raises(PrecedenceError, match=r"^hot_partitions_colocated reads partition_skew"):
        check_leaves_to("hot_partitions_colocated", "partition_skew")


def test_an_evaluation_refuses_a_rule_the_one_judging_does_not_leave_to() -> None:
    (_, now) = decode(snapshot("g", 0.0).to_json())
    ev = Evaluation(SeriesWindow([now]), DetectorsConfig(), "g", judging="idle_members")
    with pytest.raises(PrecedenceError, match="idle_members reads rebalance_loop"):
        ev.said("rebalance_loop")
    with pytest.raises(PrecedenceError, match="idle_members reads rebalance_loop"):
        ev.is_open("rebalance_loop")
    assert ev.is_open("idle_members") is False


def test_every_pair_of_the_table_is_asked_for_by_its_rule(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Over the rule cases and the recorded problems, each rule asks for the word of
    every rule the table lists for it: the table holds no pair the code no longer needs."""
    asked: set[tuple[str, str]] = set()

    def noting(rule: str, other: str) -> None:
        check_leaves_to(rule, other)
        if other != rule:
            asked.add((rule, other))

    monkeypatch.setattr(base, "check_leaves_to", noting)
    run_cases(ALL_CASES, DetectorsConfig())
    # Stopped partitions are consumer_status's findings only when turned on.
    run_cases(ALL_CASES, DetectorsConfig(consumer_stopped_severity="warning"))
    config = load_config(RECORDINGS / REPLAY_CONFIG)
    replay([RECORDINGS / s for s in (*PROBLEMS, *RECOVERIES)], config.aggregation.detectors)
    listed = {(rule, other) for rule, others in LEAVES_TO.items() for other in others}
    assert listed - asked == set()
