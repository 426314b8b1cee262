"""The live scenarios again, from their recordings: what the agent saw of each real run
(``tests/recordings/``), replayed through ``ksmon aggregate --replay``'s code path (the
stateful operator's own ``bucket.judge_records``, without Spark), must come to the same
outcome as the live job did: each problem's finding with the instance, thread and tasks
the app itself named, and nothing for the healthy runs. All recordings replay at once
(each is its own group)."""

from pathlib import Path

import pytest

from agent.aggregation.replay import ReplayResult, replay
from agent.config import load_config
from agent.model.findings import FindingEvent
from tests.support.live_scenarios import (
    EXPECTED,
    HEALTHY,
    NEVER,
    PROBLEMS,
    RECORDINGS,
    RECOVERIES,
    REPLAY_CONFIG,
    describe,
    first_open,
    load_facts,
    opened_never,
    opened_unexpected,
    recovery_problems,
)

RECORDED = (*PROBLEMS, *RECOVERIES, *HEALTHY)


@pytest.fixture(scope="module")
def replayed() -> ReplayResult:
    config = load_config(RECORDINGS / REPLAY_CONFIG)
    recordings = [RECORDINGS / scenario for scenario in RECORDED]
    return replay(recordings, config.aggregation.detectors)


def _events(result: ReplayResult, recording: Path) -> list[FindingEvent]:
    group = load_facts(recording).group
    return [e for e in result.events if e.finding.group == group]


def test_every_recorded_snapshot_is_replayed(replayed: ReplayResult) -> None:
    assert replayed.quarantined == {}
    assert replayed.snapshots == sum(
        load_facts(RECORDINGS / scenario).snapshots for scenario in RECORDED
    )


@pytest.mark.parametrize("scenario", [*PROBLEMS, *RECOVERIES])
def test_a_recorded_problem_is_found_with_its_subject(
    replayed: ReplayResult, scenario: str
) -> None:
    facts = load_facts(RECORDINGS / scenario)
    events = _events(replayed, RECORDINGS / scenario)
    for expected in EXPECTED[scenario]:
        event = first_open(events, expected)
        assert event is not None, f"{scenario}: no {expected.what} in {describe(events)}"
        expected.check(event.finding, facts)


@pytest.mark.parametrize("scenario", sorted(NEVER))
def test_a_recorded_problem_opens_nothing_it_must_not(
    replayed: ReplayResult, scenario: str
) -> None:
    events = _events(replayed, RECORDINGS / scenario)
    assert opened_never(events, scenario) == [], describe(events)


@pytest.mark.parametrize("scenario", RECOVERIES)
def test_a_recorded_recovery_opens_nothing_on_the_return_and_closes_what_was_open(
    replayed: ReplayResult, scenario: str
) -> None:
    facts = load_facts(RECORDINGS / scenario)
    events = _events(replayed, RECORDINGS / scenario)
    assert recovery_problems(events, facts) == [], describe(events)
    assert opened_unexpected(events, scenario) == [], describe(events)
    closed = {e.finding.key for e in events if e.event == "close"}
    assert any(e.finding.key in closed for e in events if e.event == "open"), (
        f"{scenario}: what the fault opened closes on the return: {describe(events)}"
    )


@pytest.mark.parametrize("scenario", HEALTHY)
def test_a_recorded_healthy_run_finds_nothing(replayed: ReplayResult, scenario: str) -> None:
    events = _events(replayed, RECORDINGS / scenario)
    assert events == [], describe(events)


def test_a_replay_shared_out_among_processes_gives_the_same_events(
    replayed: ReplayResult,
) -> None:
    config = load_config(RECORDINGS / REPLAY_CONFIG)
    recordings = [RECORDINGS / scenario for scenario in RECORDED]
    shared = replay(recordings, config.aggregation.detectors, workers=2)
    assert shared.events == replayed.events
    assert shared.snapshots == replayed.snapshots
