"""Dashboards and alerts were written against the contract tables of the job's and the
sidecar's metrics: the code (its golden files) must expose every family of them, with
exactly those labels."""

from collections.abc import Mapping

import pytest

from tests.support.metric_sources import JOB_FAMILIES, SIDECAR_FAMILIES, golden_families

CONTRACTS: Mapping[str, Mapping[str, frozenset[str]]] = {
    "job": JOB_FAMILIES,
    "sidecar": SIDECAR_FAMILIES,
}


@pytest.mark.parametrize("component", sorted(CONTRACTS))
def test_the_code_exposes_every_contract_family_with_its_labels(component: str) -> None:
    golden = golden_families()
    wrong = {
        name: (sorted(labels), sorted(golden[name]) if name in golden else "absent")
        for name, labels in CONTRACTS[component].items()
        if golden.get(name) != labels
    }
    assert not wrong, f"{component}: contract labels vs golden files: {wrong}"


def test_the_agent_families_come_from_its_golden_files() -> None:
    families = golden_families()
    assert families["ksmon_group_lag"] == {"kafka_cluster", "group"}
    assert "ksmon_polls_total" in families
