"""``quick_constructor`` makes records that are the class's own in every way: equal,
hashed, frozen, copied and written to JSON like those made by calling the class."""

import copy
import dataclasses
import pickle
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.model import PartitionInfo
from agent.model.records import quick_constructor, to_json_bytes

make_partition = quick_constructor(PartitionInfo)


@settings(max_examples=200, deadline=None)
@given(st.from_type(PartitionInfo))
def test_a_quick_partition_is_a_partition(reference: PartitionInfo) -> None:
    values = [getattr(reference, f.name) for f in dataclasses.fields(PartitionInfo)]

    made = make_partition(*values)

    assert type(made) is PartitionInfo
    assert made == reference
    assert hash(made) == hash(reference)
    assert repr(made) == repr(reference)
    assert to_json_bytes(made) == to_json_bytes(reference)
    # By repr: a NaN read back is another float object, and NaN equals only itself.
    assert repr(pickle.loads(pickle.dumps(made))) == repr(reference)  # noqa: S301 - our bytes
    assert copy.copy(made) == reference
    assert dataclasses.replace(made, partition=reference.partition + 1) != reference


def test_a_quick_partition_stays_frozen() -> None:
    made = make_partition("t", 0, 10, 0, 5, 5, 1.0, None, None, 1, False)

    with pytest.raises(dataclasses.FrozenInstanceError):
        made.lag = 0  # type: ignore[misc]
    assert made.lag == 5


def test_every_field_must_be_given() -> None:
    with pytest.raises(TypeError):
        make_partition("t", 0)


@dataclass(slots=True)
class Unfrozen:
    a: int


@dataclass(frozen=True)
class Unslotted:
    a: int


@dataclass(frozen=True, slots=True)
class Checked:
    a: int

    def __post_init__(self) -> None:
        if self.a < 0:
            raise ValueError("negative")


@dataclass(frozen=True, slots=True)
class Base:
    a: int


@dataclass(frozen=True, slots=True)
class Child(Base):
    b: int


@pytest.mark.parametrize(
    "cls",
    [
        # Its instances can be changed: not a record, and nothing to speed up.
        pytest.param(Unfrozen, id="unfrozen"),
        # Without slots there is no layout to share with a twin.
        pytest.param(Unslotted, id="unslotted"),
        # The maker would skip the check __post_init__ makes.
        pytest.param(Checked, id="post_init"),
        # A base class's slots are not the twin's.
        pytest.param(Child, id="derived"),
    ],
)
def test_only_frozen_slotted_plain_records_are_accepted(cls: type) -> None:
    with pytest.raises(TypeError, match=cls.__name__):
        quick_constructor(cls)
