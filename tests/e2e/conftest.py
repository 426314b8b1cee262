"""The e2e scenario: started once for the module that looks at it (it takes a few minutes)."""

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from agent.embedded.kafka import EmbeddedKafka
from agent.embedded.streams_app import StreamsAppBuild
from agent.errors import KsmonError
from tests.e2e.scenario import Scenario, running_scenario
from tests.support.environment import unavailable

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@pytest.fixture(scope="module")
def scenario(
    kafka: EmbeddedKafka,
    streams_app_build: StreamsAppBuild,
    spark: "SparkSession",
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Scenario]:
    try:
        with running_scenario(
            kafka, streams_app_build, spark, tmp_path_factory.mktemp("e2e")
        ) as live:
            yield live
    except KsmonError as e:
        unavailable("the e2e scenario", e)
