"""Every decoder of untrusted input, one entry each: what it returns, how it fails, valid input.

To fuzz a new decoder, add one ``Target`` here with a strategy of valid
examples; ``test_decoders.py`` then runs every property over it. (The
sidecar's app-metrics text parser has its own property test over real
exporter captures in ``tests/unit/streams/test_app_metrics.py``.)
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from agent.aggregation.judging import facts
from agent.model import Snapshot
from agent.model.records import RecordError
from agent.streams.assignment_info import AssignmentInfo, decode_assignment_info
from agent.streams.checkpoint import CheckpointFile, parse_checkpoint
from agent.streams.codec import DecodeError
from agent.streams.consumer_protocol import (
    ConsumerAssignment,
    ConsumerSubscription,
    decode_consumer_assignment,
    decode_consumer_subscription,
)
from agent.streams.offsets_topic import (
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    OtherRecordKey,
    StreamsCommitMetadata,
    decode_group_metadata_value,
    decode_offset_commit_value,
    decode_offsets_key,
    decode_streams_commit_metadata,
)
from agent.streams.subscription_info import SubscriptionInfo, decode_subscription_info
from tests.unit.fuzz import mutations, strategies
from tests.unit.fuzz.strategies import Example


def _as_facts(example: Example) -> Example:
    """A valid snapshot's example, expecting what the job reads of it."""
    assert isinstance(example.expected, Snapshot)
    return Example(example.data, facts.facts_of(example.expected))


@dataclass(frozen=True)
class Target:
    """A decoder under fuzzing.

    ``values``: the types a successful decode returns. ``errors``: the typed
    errors it *returns* for bad input; ``raises``: the typed errors it *raises*
    instead (``Snapshot.from_json``). Anything else escaping is a bug.
    """

    name: str
    decode: Callable[[Any], object]
    values: tuple[type, ...]
    valid: st.SearchStrategy[Example]
    errors: tuple[type, ...] = (DecodeError,)
    raises: tuple[type[Exception], ...] = ()
    text: bool = False  # the input is str, not bytes
    # How to damage a valid input; bytes damage by default.
    damage: Callable[[Any], st.SearchStrategy[Any]] = mutations.damaged
    # Share of the example budget: below 1 for formats whose examples are costly to build.
    weight: float = 1.0

    def outcome(self, data: object) -> object:
        """The decoder's answer: a value, a returned error, or a raised typed error."""
        try:
            result = self.decode(data)
        except self.raises as e:
            return e
        assert isinstance(result, (*self.values, *self.errors)), (self.name, result)
        return result

    def random_inputs(self) -> st.SearchStrategy[Any]:
        return st.text(max_size=200) if self.text else st.binary(max_size=300)


TARGETS = [
    Target(
        "ConsumerProtocolSubscription",
        decode_consumer_subscription,
        (ConsumerSubscription,),
        strategies.consumer_subscriptions(),
    ),
    Target(
        "ConsumerProtocolAssignment",
        decode_consumer_assignment,
        (ConsumerAssignment,),
        strategies.consumer_assignments(),
    ),
    Target(
        "SubscriptionInfo",
        decode_subscription_info,
        (SubscriptionInfo,),
        strategies.subscription_infos(),
    ),
    Target(
        "AssignmentInfo", decode_assignment_info, (AssignmentInfo,), strategies.assignment_infos()
    ),
    Target(
        "OffsetsTopicKey",
        decode_offsets_key,
        (OffsetCommitKey, GroupMetadataKey, OtherRecordKey),
        strategies.offsets_keys(),
    ),
    Target(
        "OffsetCommitValue",
        decode_offset_commit_value,
        (OffsetCommitValue,),
        strategies.offset_commit_values(),
    ),
    Target(
        "GroupMetadataValue",
        decode_group_metadata_value,
        (GroupMetadataValue,),
        strategies.group_metadata_values(),
    ),
    Target(
        "StreamsCommitMetadata",
        decode_streams_commit_metadata,
        (StreamsCommitMetadata, type(None)),
        strategies.streams_commit_metadata(),
        text=True,
        damage=mutations.damaged_text,
    ),
    Target("CheckpointFile", parse_checkpoint, (CheckpointFile,), strategies.checkpoint_files()),
    Target(
        "SnapshotJson",
        Snapshot.from_json,
        (Snapshot,),
        strategies.snapshots(),
        errors=(),
        raises=(RecordError,),
        damage=lambda data: mutations.damaged_json(data) | mutations.damaged(data),
        weight=0.25,  # a snapshot is a tree of ~20 records: one example builds many
    ),
    Target(
        "SnapshotFacts",  # the job's reader: what it cannot use is set aside, never a crash
        facts.decode,
        (tuple,),
        strategies.snapshots().map(_as_facts),
        errors=(),
        raises=(facts.BadSnapshotError,),
        damage=lambda data: mutations.damaged_json(data) | mutations.damaged(data),
        weight=0.25,
    ),
]

BINARY_TARGETS = [t for t in TARGETS if not t.text]
