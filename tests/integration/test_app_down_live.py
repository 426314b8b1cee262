"""An app whose every instance stopped stays CRITICAL for as long as it is down
(issue 27 #1): the real fixture app on the real broker, the real agent and job.

Seen before: ``no_live_consumers`` closed 10 minutes after the app stopped, while its
own text said the last member left 600 s ago and the lag grew: the rule had looked
only at its look-back, in which no member was left to have "left". A fact stays true
as long as it lasts; the look-back bounds what a rule reads, not that.

The detector windows are shortened so that the job's whole look-back
(``history_retention``) passes twice over within a couple of minutes; the rule's own
thresholds keep their defaults. Input keeps arriving all along, as it does for an app
that is down in production.
"""

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import yaml
from pyspark.sql import SparkSession

from agent.aggregation.job import AggregationJob
from agent.config.load import parse_config
from agent.embedded.kafka import EmbeddedKafka
from agent.embedded.load import KeyedLoad
from agent.embedded.process import wait_until
from agent.embedded.streams_app import StreamsAppBuild, StreamsAppInstance
from agent.embedded.topics import create_topics
from agent.model.findings import FindingEvent
from agent.runner import AgentRunner
from tests.integration.test_detectors_live import DETECTORS, Live, _app, _config
from tests.support.live_scenarios import describe
from tests.support.streams import StreamsApps, unique_name

pytestmark = [pytest.mark.integration, pytest.mark.live_detectors, pytest.mark.timeout(900)]

KIND = "no_live_consumers"
# Every window that sets the look-back, short: the job forgets everything older than
# about 50 s of event time, so an app down 2.5 look-backs has no member left in it.
SHORT_WINDOWS = {
    **DETECTORS,
    "evaluation_window": "20s",
    "progress_stall_after": "30s",
    "restore_stall_after": "20s",
    "thread_history": "30s",
    "thread_death_grace": "20s",
    "loop_window": "15s",
    "consumer_status_window": "30s",
    "idle_members_after": "30s",
    "assignment_growth_window": "30s",
    "budget_hold": "30s",
    "copartition_mismatch_after": "30s",
    "tasks_per_thread_lag_window": "30s",
    "changelog_growth_window": "30s",
}
DOWN_LOOK_BACKS = 2.5
WAIT_SECONDS = 600.0


@dataclass
class Down:
    live: Live
    instance: StreamsAppInstance
    group: str
    stopped_at: float


@pytest.fixture(scope="module")
def down(
    kafka: EmbeddedKafka,
    streams_app_build: StreamsAppBuild,
    spark: SparkSession,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Down]:
    work = tmp_path_factory.mktemp("down")
    prefix = unique_name("down")
    _config(kafka, work, prefix)  # writes ksmon.yaml with the live tests' settings
    document = yaml.safe_load((work / "ksmon.yaml").read_text())
    document["aggregation"]["detectors"] = SHORT_WINDOWS
    text = yaml.safe_dump(document, sort_keys=False)
    (work / "ksmon.yaml").write_text(text)
    config = parse_config(text, str(work / "ksmon.yaml"), {})

    apps = StreamsApps(kafka, streams_app_build, work / "apps")
    app = _app(prefix, "stopped")
    create_topics(kafka.bootstrap_servers, {app.input_topic: 2})
    agent_runner = AgentRunner(config)
    job = AggregationJob(config, spark)
    load = KeyedLoad(kafka.bootstrap_servers, app.input_topic, rate=20)
    try:
        agent_runner.start()
        job.start()
        (instance,) = apps.start(app, 1)
        load.start()
        live = Live(prefix, config, job, apps, work / "spool")
        # The job has judged the app running before it stops.
        started = time.time()
        wait_until(
            lambda: _judged_since(job, started + 5),
            timeout=WAIT_SECONDS,
            what="the job judging the running app",
            interval=2,
        )
        instance.stop()
        yield Down(live, instance, app.application_id, time.time())
    finally:
        load.stop()
        with contextlib.suppress(Exception):
            job.stop()
        agent_runner.stop()
        apps.stop_all()


def _judged_since(job: AggregationJob, moment: float) -> bool:
    return dict(job.latest.view().newest_snapshot).get("local", 0.0) >= moment


def _of_kind(events: list[FindingEvent]) -> list[FindingEvent]:
    return [e for e in events if e.finding.kind == KIND]


def test_an_app_down_longer_than_the_look_back_stays_critical_until_a_member_returns(
    down: Down,
) -> None:
    live, group = down.live, down.group
    look_back = live.config.aggregation.detectors.history_retention
    wait_until(
        lambda: any(e.event == "open" for e in _of_kind(live.events(group))),
        timeout=WAIT_SECONDS,
        what=f"{group}: {KIND} open",
        interval=3,
    )
    down_until = down.stopped_at + DOWN_LOOK_BACKS * look_back
    wait_until(
        lambda: _judged_since(live.job, down_until),
        timeout=WAIT_SECONDS,
        what=f"the job judging {DOWN_LOOK_BACKS} look-backs ({look_back:.0f} s) of the app down",
        interval=3,
    )
    events = _of_kind(live.events(group))
    assert [e.event for e in events if e.event == "close"] == [], describe(events)
    (still_open,) = [f for f in live.job.latest.view().open_findings if f.kind == KIND]
    assert still_open.severity == "critical"
    # Its evidence follows the newest poll: seen at the end of the wait, not at opening.
    assert still_open.last_seen >= down.stopped_at + 2 * look_back, still_open

    down.instance.start()
    wait_until(
        lambda: any(e.event == "close" for e in _of_kind(live.events(group))),
        timeout=WAIT_SECONDS,
        what=f"{group}: {KIND} closed after a member returned",
        interval=3,
    )
    (closed,) = [e for e in _of_kind(live.events(group)) if e.event == "close"]
    assert closed.reason == ""  # closed by its rule (a member is back), not forgotten
