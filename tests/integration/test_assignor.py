"""The Java task assignor (assignor/): built with the project's Maven runner and cache and
its JUnit tests run, so every CI run proves it; then in a real Kafka Streams app, the
fixture app with the assignor on its classpath and ``task.assignor.class`` set, reading
the task loads topic on the real broker through ``ksmon.assignor.loads.topic``. Without
loads it falls back to Kafka Streams' own placement and says why; once the job's
publisher has put the loads there, a new instance's rebalance places the two hot tasks
apart."""

import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.aggregation.judging.board import GroupTaskRates
from agent.aggregation.outputs.task_loads_topic import TaskLoadsPublisher
from agent.embedded.kafka import EmbeddedKafka
from agent.embedded.maven import run_maven
from agent.embedded.process import wait_until
from agent.embedded.streams_app import StreamsAppBuild, StreamsAppConfig, StreamsAppInstance
from agent.embedded.topics import create_topics
from agent.errors import SetupError, UnreachableError
from tests.support.environment import unavailable
from tests.support.streams import StreamsApps, unique_name

pytestmark = pytest.mark.integration

ASSIGNOR = Path(__file__).parents[2] / "assignor"
ASSIGNOR_CLASS = "dev.ksmon.assignor.LoadAwareTaskAssignor"
PARTITIONS = 4
TASKS = 2 * PARTITIONS  # the count topology's two sub-topologies (it re-keys)
CLUSTER = "local"  # ksmon's name of the cluster: the loads' key is <cluster>/<application id>
HOT, COLD = 100.0, 1.0


@pytest.fixture(scope="module")
def assignor_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The assignor packaged (its JUnit tests run first): the build directory."""
    build = tmp_path_factory.mktemp("assignor-build")
    try:
        run_maven(
            ASSIGNOR / "pom.xml",
            ["-q", "package"],
            {"ksmon.build.dir": str(build)},
            purpose="building and testing the ksmon task assignor",
        )
    except UnreachableError as e:
        unavailable("Maven Central", e)
    except SetupError as e:
        pytest.fail(str(e), pytrace=False)
    return build


def test_assignor_builds_and_its_junit_tests_pass(assignor_build: Path) -> None:
    suites = {
        suite.get("name"): suite
        for report in (assignor_build / "surefire-reports").glob("TEST-*.xml")
        # The reports this build just wrote, not outside input.
        for suite in [ET.parse(report).getroot()]  # noqa: S314
    }
    # Every suite ran: placement and fallbacks, the loads record, the loads topic reader,
    # large groups, and the cases shared with explain.
    expected = {
        "dev.ksmon.assignor.LoadAwareTaskAssignorTest",
        "dev.ksmon.assignor.LoadsRecordTest",
        "dev.ksmon.assignor.TopicTaskLoadsTest",
        "dev.ksmon.assignor.LargeGroupTest",
        "dev.ksmon.assignor.SharedCasesTest",
    }
    assert expected <= set(suites)
    for name, suite in suites.items():
        assert int(suite.get("tests", "0")) > 0, name
        assert suite.get("failures") == "0", name
        assert suite.get("errors") == "0", name


@pytest.fixture
def apps(
    kafka: EmbeddedKafka, streams_app_build: StreamsAppBuild, tmp_path: Path
) -> Iterator[StreamsApps]:
    apps = StreamsApps(kafka, streams_app_build, tmp_path / "apps")
    try:
        yield apps
    finally:
        apps.stop_all()


def _tasks(instance: StreamsAppInstance) -> set[str]:
    state = instance.oracle() or {}
    return {t["taskId"] for th in state.get("threads", []) for t in th["activeTasks"]}


def _assignor_lines(instances: list[StreamsAppInstance]) -> list[str]:
    return [
        line
        for i in instances
        for line in i.process.log_path.read_text(errors="replace").splitlines()
        if "ksmon load-aware assignor" in line
    ]


def test_the_assignor_falls_back_without_loads_then_places_hot_tasks_apart(
    kafka: EmbeddedKafka, apps: StreamsApps, assignor_build: Path
) -> None:
    (assignor_jar,) = assignor_build.glob("ksmon-task-assignor-*.jar")
    loads_topic = unique_name("task-loads")
    app = StreamsAppConfig(
        application_id=unique_name("assigned"),
        input_topic=unique_name("assigned-in"),
        extra_classpath=(assignor_jar,),
        streams_config={
            "task.assignor.class": ASSIGNOR_CLASS,
            "ksmon.assignor.loads.topic": loads_topic,
            "ksmon.assignor.loads.cluster": CLUSTER,
        },
    )
    create_topics(kafka.bootstrap_servers, {app.input_topic: PARTITIONS, loads_topic: 1})
    publisher = TaskLoadsPublisher({"bootstrap_servers": kafka.bootstrap_servers}, loads_topic)
    try:
        # The topic holds no loads for the app yet: Kafka Streams' own placement.
        (first,) = apps.start(app, 1)
        wait_until(lambda: len(_tasks(first)) == TASKS, timeout=120, what="every task")
        # A line per rebalance (a new app's start may take more than one).
        fallbacks = _assignor_lines([first])
        assert fallbacks
        assert all(
            f"falls back to Kafka Streams' sticky assignor: no loads measured for application "
            f"{app.application_id}" in line
            for line in fallbacks
        ), fallbacks

        tasks = sorted(_tasks(first))
        hot = set(tasks[:2])
        loads = {t: HOT if t in hot else COLD for t in tasks}
        rates = GroupTaskRates(CLUSTER, app.application_id, time.time(), loads)
        assert publisher.publish([rates]) == 1
    finally:
        publisher.close()

    (second,) = apps.start(app, 1)

    def placed() -> bool:
        held = [_tasks(first), _tasks(second)]
        return all(held) and sum(map(len, held)) == TASKS

    wait_until(placed, timeout=180, what="the tasks shared by both instances", interval=1)
    assert all(len(_tasks(i) & hot) == 1 for i in (first, second)), (
        _tasks(first),
        _tasks(second),
        _assignor_lines([first, second]),
    )
    placed_lines = [line for line in _assignor_lines([first, second]) if "placed" in line]
    assert placed_lines, _assignor_lines([first, second])
