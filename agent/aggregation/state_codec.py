"""A group's state <-> what the state store keeps: the hysteresis as JSON, the windows as
a versioned pickle.

The two halves age differently. Open findings are a contract (the findings
topic carries them too) and are kept as JSON, readable by every later
version: an upgrade never forgets a finding it has published as open. The
windows of polls are ``facts.Poll`` tuples, pickled (a hundred polls of a
group in a few milliseconds); their layout changes with the facts the rules
read, so they carry ``WINDOWS_FORMAT`` and a window of another format is
dropped rather than misread: the rules then judge from the polls that follow,
and ``decode`` says so (the job logs it once). Bump ``WINDOWS_FORMAT`` with
every change to a ``facts`` record (``tests/unit/aggregation/test_state_codec.py``
keeps the records' fields, and fails until it is bumped).
"""

import pickle
from typing import NamedTuple

from agent.aggregation.group import GroupState
from agent.aggregation.hysteresis import HysteresisState

WINDOWS_FORMAT = 1  # facts records as of the first stateful job


class StoredGroup(NamedTuple):
    """A group's state as the state store holds it (one value of the state's map)."""

    windows_format: int
    hysteresis: str  # HysteresisState as JSON
    windows: bytes  # pickled dict: agent id -> list of facts.Poll


def encode(state: GroupState) -> StoredGroup:
    return StoredGroup(
        WINDOWS_FORMAT,
        state.hysteresis.to_json(),
        pickle.dumps(state.series, protocol=pickle.HIGHEST_PROTOCOL),
    )


def decode(stored: StoredGroup) -> tuple[GroupState, bool]:
    """The group's state, and whether its windows had to be dropped (another format)."""
    hysteresis = HysteresisState.from_json(stored.hysteresis)
    if stored.windows_format != WINDOWS_FORMAT:
        return GroupState(hysteresis=hysteresis), True
    series = pickle.loads(stored.windows)  # noqa: S301 - the job's own state store
    return GroupState(series=series, hysteresis=hysteresis), False
