"""The driver's board: reports of many buckets folded into one view, and a restart."""

from agent.aggregation.judging.board import Board
from agent.aggregation.judging.bucket import judge_records
from agent.aggregation.judging.group import GroupState
from agent.aggregation.judging.results import GaugeRow
from agent.aggregation.judging.stored_bucket import GroupKey
from agent.config.schema import DetectorsConfig
from tests.unit.aggregation.cases import hot_partitions
from tests.unit.aggregation.cases import internal_topic_budget as budget

PARAMS = DetectorsConfig()
HOT = hot_partitions.CASES[0]


def _records(*cases: object) -> list[tuple[str, str]]:
    return [(s.to_json().decode(), "test") for c in cases for s in c.snapshots]  # type: ignore[attr-defined]


def _broker_case() -> object:
    return next(c for c in budget.BROKER_CASES if c.expect)


def test_the_facts_a_cluster_shares_are_judged_once_whatever_buckets_carry_them() -> None:
    case = _broker_case()
    # Every snapshot of a poll carries the cluster's broker loads: here the same polls
    # arrive through two buckets, as two groups of one cluster would.
    records = _records(case)
    one_bucket = Board()
    events_one, _ = one_bucket.apply([judge_records({}, records, PARAMS)], PARAMS)
    two_buckets = Board()
    outputs = [judge_records({}, records, PARAMS), judge_records({}, records, PARAMS)]
    events_two, _ = two_buckets.apply(outputs, PARAMS)
    cluster_events = [e for e in events_two if e.finding.group == ""]
    assert cluster_events, "the case's broker finding"
    assert cluster_events == [e for e in events_one if e.finding.group == ""]


def test_a_restarted_board_shows_the_same_findings_and_judges_on_the_same() -> None:
    case = _broker_case()
    records = _records(HOT, case)
    half = len(records) // 2
    groups: dict[GroupKey, GroupState] = {}
    board = Board()
    board.apply([judge_records(groups, records[:half], PARAMS)], PARAMS)
    restored = Board.restored(board.saved())
    assert restored.open_findings() == board.open_findings()
    assert restored.newest == board.newest
    rest = judge_records(groups, records[half:], PARAMS)
    assert restored.apply([rest], PARAMS)[0] == board.apply([rest], PARAMS)[0]


def test_the_configured_view_of_a_gauge_wins_then_the_newest() -> None:
    board = Board()
    board.apply([judge_records({}, _records(HOT), PARAMS)], PARAMS)
    rows = board.gauge_rows()
    keys = [r._replace(value=0.0) for r in rows]
    assert len(keys) == len(set(keys)), "one value per series of labels"
    assert any(r.metric == "thread_load" for r in rows)


def test_a_batch_changes_the_gauges_of_the_groups_it_reported_and_no_others() -> None:
    # The board keeps each group's rows between batches and makes again only those of
    # the groups a batch reported: a group without a poll keeps showing its last view.
    other = hot_partitions.CASES[1]
    hot = _records(HOT)
    board = Board()
    groups: dict[GroupKey, GroupState] = {}
    # One poll: no rates yet (they need two), so the hot group's gauges change next.
    board.apply([judge_records(groups, hot[:1] + _records(other), PARAMS)], PARAMS)

    def rows_of(group: str, of: Board = board) -> list[GaugeRow]:
        return sorted((r for r in of.gauge_rows() if r.group == group), key=repr)

    other_before, hot_before = rows_of(other.name), rows_of(HOT.name)
    board.apply([judge_records(groups, hot[1:], PARAMS)], PARAMS)
    assert rows_of(other.name) == other_before
    assert not any(r.metric == "partition_rate" for r in hot_before)
    assert any(r.metric == "partition_rate" for r in rows_of(HOT.name))
    fresh = Board()
    fresh.apply([judge_records({}, hot, PARAMS)], PARAMS)
    assert rows_of(HOT.name) == rows_of(HOT.name, fresh)
