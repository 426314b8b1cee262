"""The converters written from each record's field types give exactly what looking
at every value gives (``plain_by_value``, the original ``to_plain``), and the JSON
writers exactly the text the JSON encoder writes of that."""

import enum
import json
import math
from dataclasses import dataclass, field, replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.model import Snapshot
from agent.model.findings import Finding
from agent.model.records import OMIT_WHEN_DEFAULT, plain_by_value, to_json_bytes, to_plain
from tests.unit.exposition.test_agent_metrics_golden import plain_snapshot, streams_snapshot


def test_the_golden_snapshots_convert_the_same() -> None:
    for snapshot in (streams_snapshot(), plain_snapshot()):
        assert to_plain(snapshot) == plain_by_value(snapshot)
        assert Snapshot.from_json(to_json_bytes(snapshot)) == snapshot


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.from_type(Snapshot))
def test_any_snapshot_converts_the_same(snapshot: Snapshot) -> None:
    plain = to_plain(snapshot)
    assert plain == plain_by_value(snapshot)
    assert type(plain) is dict
    assert to_json_bytes(snapshot) == encoded(snapshot)


def encoded(value: object) -> bytes:
    """The reference text: the encoder's, of the values looked at one by one."""
    return json.dumps(plain_by_value(value), separators=(",", ":"), ensure_ascii=False).encode()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.builds(
        Finding,
        evidence=st.dictionaries(
            st.text(max_size=5),
            st.recursive(
                st.none() | st.integers() | st.text(max_size=5),
                lambda inner: (
                    st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(max_size=3), inner, max_size=3)
                ),
                max_leaves=6,
            ),
            max_size=4,
        ),
    )
)
def test_any_finding_converts_the_same(finding: Finding) -> None:
    assert to_plain(finding) == plain_by_value(finding)
    assert to_json_bytes(finding) == encoded(finding)


class Kind(enum.IntEnum):
    LEADER = 1


class Mode(enum.StrEnum):
    CENTRAL = "central"


@dataclass(frozen=True)
class OnlyFlags:
    first: bool = field(default=False, metadata=OMIT_WHEN_DEFAULT)
    second: int = field(default=0, metadata=OMIT_WHEN_DEFAULT)


@pytest.mark.parametrize(
    ("value", "why"),
    [
        (replace(plain_snapshot().partitions[0], lag_seconds=3), "an int in a float field"),
        (replace(plain_snapshot().partitions[0], lag_seconds=math.nan), "NaN as JavaScript"),
        (replace(plain_snapshot().partitions[0], lag_seconds=-math.inf), "-Infinity"),
        (replace(plain_snapshot().partitions[0], lag_seconds=1e300 * 10), "an overflow"),
        (replace(plain_snapshot().partitions[0], leader_id=True), "a bool in an int field"),
        (replace(plain_snapshot().partitions[0], leader_id=Kind.LEADER), "an IntEnum"),
        (replace(plain_snapshot().partitions[0], topic=Mode.CENTRAL), "a StrEnum"),
        (replace(plain_snapshot().partitions[0], topic='a "b"\\\n\x00é€😀'), "escapes"),
        (OnlyFlags(), "a record whose fields are all left out: {}"),
        (OnlyFlags(second=2), "the first written of optional fields takes no comma"),
        (OnlyFlags(True, 2), "then a comma between them"),
    ],
)
def test_a_value_unlike_its_declared_type_is_written_as_the_encoder_writes_it(
    value: object, why: str
) -> None:
    assert to_json_bytes(value) == encoded(value), why


def test_a_flag_left_at_its_default_is_not_written_and_reads_back_as_the_default() -> None:
    snapshot = plain_snapshot()
    bounded = replace(
        snapshot,
        partitions=tuple(replace(p, lag_seconds_lower_bound=True) for p in snapshot.partitions),
    )

    assert b"lag_seconds_lower_bound" not in to_json_bytes(snapshot)
    assert b'"lag_seconds_lower_bound":true' in to_json_bytes(bounded)
    assert Snapshot.from_json(to_json_bytes(snapshot)) == snapshot
    assert Snapshot.from_json(to_json_bytes(bounded)) == bounded
