"""Fixtures shared by the integration modules that evaluate the recorded live scenarios."""

import pytest
from pyspark.sql import DataFrame, SparkSession

from agent.aggregation.evaluate import prepare, snapshot_tables
from agent.aggregation.parse import parse_snapshots
from agent.aggregation.source import replay_frame
from agent.aggregation.tables import KEYS, Tables
from agent.config import load_config
from agent.config.schema import DetectorsConfig
from tests.support.live_scenarios import HEALTHY, PROBLEMS, RECORDINGS, REPLAY_CONFIG


@pytest.fixture(scope="session")
def recorded_params() -> DetectorsConfig:
    """The detector settings the recordings were made and are replayed with."""
    return load_config(RECORDINGS / REPLAY_CONFIG).aggregation.detectors


@pytest.fixture(scope="session")
def recorded_snapshots(spark: SparkSession) -> DataFrame:
    """Every recorded scenario's snapshots, prepared as the job prepares its history."""
    recordings = [RECORDINGS / scenario for scenario in (*PROBLEMS, *HEALTHY)]
    return prepare(parse_snapshots(replay_frame(spark, recordings)).parsed)


@pytest.fixture(scope="session")
def recorded_tables(recorded_snapshots: DataFrame, recorded_params: DetectorsConfig) -> Tables:
    """The tables of every recorded snapshot, as replay builds them to judge every poll."""
    return snapshot_tables(recorded_snapshots, recorded_snapshots.select(*KEYS), recorded_params)
