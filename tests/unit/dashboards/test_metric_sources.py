"""The list of components whose metrics are pending must shrink as they land."""

import pytest

from tests.support.metric_sources import PENDING, golden_families, landed


@pytest.mark.parametrize("key", sorted(PENDING))
def test_pending_components_have_not_landed(key: str) -> None:
    pending = PENDING[key]
    evidence = landed(pending)
    assert not evidence, (
        f"{pending.component} has landed ({'; '.join(evidence)}): delete PENDING[{key!r}] in "
        "tests/support/metric_sources.py and start it in the e2e scenario "
        "(tests/e2e/scenario.py), so its panels and alerts are checked for real"
    )


def test_the_agent_families_come_from_its_golden_files() -> None:
    families = golden_families()
    assert families["ksmon_group_lag"] == {"kafka_cluster", "group"}
    assert "ksmon_polls_total" in families
