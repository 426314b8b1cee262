"""The small PromQL reader the dashboard and rule tests rely on to catch typos."""

import pytest

from tests.support.promql import read


@pytest.mark.parametrize(
    ("expr", "metrics", "matched", "grouping", "why"),
    [
        (
            'max by (kafka_cluster, group) (ksmon_group_lag{kafka_cluster=~"$cluster"})',
            {"ksmon_group_lag"},
            {"kafka_cluster"},
            {"kafka_cluster", "group"},
            "an aggregation over a selector",
        ),
        (
            "ksmon_sidecar_stream_threads_alive < ksmon_sidecar_stream_threads_expected",
            {"ksmon_sidecar_stream_threads_alive", "ksmon_sidecar_stream_threads_expected"},
            set(),
            set(),
            "bare metric names on both sides of a comparison",
        ),
        (
            "time() - ksmon_poll_last_success_timestamp_seconds > 300 unless on (job, instance) "
            "ksmon_kafka_up == 0",
            {"ksmon_poll_last_success_timestamp_seconds", "ksmon_kafka_up"},
            set(),
            {"job", "instance"},
            "functions and keywords are not metrics",
        ),
        (
            'rate(ksmon_polls_total{result="ok", kafka_cluster!="x"}[$__rate_interval])',
            {"ksmon_polls_total"},
            {"result", "kafka_cluster"},
            set(),
            "label values and ranges are not metrics",
        ),
        (
            'count(ksmon_finding_active{kind="stream_threads_dead"} == 1)',
            {"ksmon_finding_active"},
            {"kind"},
            set(),
            "a label value that looks like a metric name is not one",
        ),
        (
            "max by (instance) (ksmon_agent_info) * on (instance) group_left (version) "
            "max by (instance, version) (ksmon_build_info)",
            {"ksmon_agent_info", "ksmon_build_info"},
            set(),
            {"instance", "version"},
            "group_left labels count as grouping labels",
        ),
    ],
)
def test_read(
    expr: str, metrics: set[str], matched: set[str], grouping: set[str], why: str
) -> None:
    reading = read(expr)
    assert reading.metrics == metrics, why
    assert set().union(*(s.matched_labels for s in reading.selectors)) == matched, why
    assert reading.grouping_labels == grouping, why
