"""assignment_size_risk: a classic group's metadata record near, or growing towards, the
offsets topic's max.message.bytes (KAFKA-7149), before the rebalance loop starts."""

import dataclasses
from collections.abc import Callable

from agent.aggregation.judging.hysteresis import Candidate
from agent.model import MemberInfo, Snapshot
from tests.support.snapshots import partition, plain_member, snapshot, streams_member
from tests.unit.aggregation.cases import T0, Case, Check, Expect, all_of, evidence, explains, times

KIND = "assignment_size_risk"
LIMIT = 1_048_588  # the broker's default message.max.bytes, which the offsets topic inherits
SHORT = 180  # seconds of polls every 10 s: well past the default evaluation_window (60 s)
LONG = 3600  # seconds of polls every minute: the growth look-back the cases run with (1 h)

# (subscription bytes, assignment bytes) of each member, by (instance, thread).
Sizes = dict[tuple[str, int], tuple[int, int]]


def _even(members: int, total: int) -> Sizes:
    """``members`` stream threads over two instances, ``total`` bytes split evenly, a tenth
    of each member's share its subscription."""
    each = total // members
    return {
        ("pA" if n % 2 == 0 else "pB", n // 2 + 1): (each // 10, each - each // 10)
        for n in range(members)
    }


def _members(sizes: Sizes, *, endpoint: str | None = None, version: int = 11) -> list[MemberInfo]:
    members = []
    for n, ((process, thread), (subscription, assignment)) in enumerate(sorted(sizes.items())):
        member = streams_member(
            process,
            thread,
            {f"0_{n}": [("in", n)]},
            subscription_bytes=subscription,
            assignment_bytes=assignment,
        )
        assert member.streams is not None
        streams = dataclasses.replace(member.streams, endpoint=endpoint, assignment_version=version)
        members.append(dataclasses.replace(member, streams=streams))
    return members


def _history(
    group: str,
    members: Callable[[float], list[MemberInfo]],
    *,
    until: float = SHORT,
    step: float = 10,
    state: Callable[[float], str] = lambda s: "Stable",
    limit: int | None = LIMIT,
    group_type: str = "classic",
    streams: bool = True,
) -> list[Snapshot]:
    """A poll every ``step`` s up to ``until`` s after T0. Classic groups come without
    metadata while they rebalance (no Streams data, blob sizes 0), as brokers describe them."""
    snapshots = []
    for t in times(0, until, step):
        s = t - T0
        word = state(s)
        present = members(s)
        if group_type == "classic" and word != "Stable":
            present = [
                dataclasses.replace(m, streams=None, subscription_bytes=0, assignment_bytes=0)
                for m in present
            ]
        polled = snapshot(
            group,
            t,
            members=present,
            partitions=[partition("in", n, end=1000) for n in range(len(present))],
            state=word,
            streams=streams,
            max_message_bytes=limit,
        )
        if group_type != "classic":
            polled = dataclasses.replace(
                polled,
                group=dataclasses.replace(
                    polled.group,
                    group_type=group_type,
                    protocol_type=group_type,
                    protocol=None,
                    group_epoch=5,
                    assignment_epoch=5,
                ),
            )
        snapshots.append(polled)
    return snapshots


def _growing(start: int, end: int) -> Callable[[float], list[MemberInfo]]:
    """Four members whose metadata grows linearly from ``start`` to ``end`` bytes over
    ``LONG`` (partitions added to the topics they read, say)."""
    return lambda s: _members(_even(4, round(start + (end - start) * s / LONG)))


def _since_start(candidates: list[Candidate]) -> None:
    (found,) = candidates
    assert found.since == T0, "at risk since the first poll; the rebalance did not break it"


def _projected(low_hours: float, high_hours: float) -> Check:
    def check(candidates: list[Candidate]) -> None:
        (found,) = candidates
        seconds = found.evidence["projected_seconds_to_limit"]
        assert low_hours * 3600 <= seconds <= high_hours * 3600, found.evidence

    return check


def _largest(*expected: tuple[str, int, int]) -> Check:
    """The largest members, biggest first: (instance, thread, bytes)."""

    def check(candidates: list[Candidate]) -> None:
        (found,) = candidates
        members = found.evidence["largest_members"]
        assert [(m["process"], m["thread"], m["bytes"]) for m in members] == list(expected), members

    return check


UNEVEN: Sizes = {
    ("pA", 1): (10_000, 170_000),
    ("pA", 2): (10_000, 140_000),
    ("pB", 1): (10_000, 130_000),
    ("pB", 2): (10_000, 120_000),
}

CASES = [
    Case(
        "asr-over-threshold",
        "4 stream threads whose metadata totals 600,000 bytes, 57% of the 1,048,588-byte "
        "limit, for 3 minutes: at or above assignment_size_ratio (50%), one rebalance of "
        "growth away from the loop",
        KIND,
        _history("asr-over-threshold", lambda s: _members(UNEVEN)),
        expect=[Expect("warning")],
        check=all_of(
            evidence(
                variant="threshold",
                metadata_bytes=600_000,
                max_message_bytes=LIMIT,
                ratio=0.572,
                warning_ratio=0.5,
                members=4,
                bytes_per_member=150_000,
                instances=2,
                partitions=4,
                growth_bytes_per_hour=0.0,
                projected_seconds_to_limit=None,
                application_server=False,
                at_risk_for_seconds=SHORT,
            ),
            _largest(("pA", 1, 180_000), ("pA", 2, 150_000), ("pB", 1, 140_000)),
            explains(
                "group asr-over-threshold's metadata record (subscriptions and assignments of "
                "4 members, one __consumer_offsets record) is 600000 bytes, 57% of the offsets "
                "topic's max.message.bytes 1048588 (warning at 50%); past the limit every "
                "rebalance fails (KAFKA-7149) and the group rebalances in a loop: raise "
                "max.message.bytes on __consumer_offsets, or run fewer instances or stream "
                "threads, read fewer or shorter-named topics and partitions, or split the "
                "application",
                absent="application.server",
            ),
        ),
    ),
    Case(
        "asr-exactly-at-share",
        "metadata exactly half the limit: 'at or above' the share fires",
        KIND,
        _history("asr-exactly-at-share", lambda s: _members(_even(2, LIMIT // 2))),
        expect=[Expect("warning")],
        check=evidence(variant="threshold", ratio=0.5),
    ),
    Case(
        "asr-application-server",
        "over the share with application.server set and an old assignment version: the "
        "explanation offers leaving application.server unset (it puts every instance's "
        "partitions into each assignment) and a Kafka Streams 2.4+ upgrade",
        KIND,
        _history(
            "asr-application-server",
            lambda s: _members(_even(4, 700_000), endpoint="app-0:8080", version=4),
        ),
        expect=[Expect("warning")],
        check=all_of(
            evidence(application_server=True, oldest_assignment_version=4),
            explains(
                "or leave application.server unset (it puts every instance's partitions into "
                "each assignment), or upgrade Kafka Streams to 2.4+"
            ),
        ),
    ),
    Case(
        "asr-plain-consumer-group",
        "a plain classic consumer group of 40 members whose subscriptions and assignments "
        "total 640,000 bytes: the coordinator writes its record the same way, so the same "
        "loop awaits it (KAFKA-7149 is not Streams-only); the fixes are a consumer's",
        KIND,
        _history(
            "asr-plain-consumer-group",
            lambda s: [
                dataclasses.replace(
                    plain_member(f"c{n}", [("in", n)]),
                    subscription_bytes=6_000,
                    assignment_bytes=10_000,
                )
                for n in range(40)
            ],
            streams=False,
        ),
        expect=[Expect("warning")],
        check=all_of(
            evidence(metadata_bytes=640_000, members=40, instances=40, is_streams=False),
            explains("or run fewer members or subscribe to fewer or shorter-named topics"),
        ),
    ),
    Case(
        "asr-through-a-rebalance",
        "over the share all along; a rebalance at 60-90 s (members without metadata, sizes 0) "
        "neither counts nor breaks the run",
        KIND,
        _history(
            "asr-through-a-rebalance",
            lambda s: _members(UNEVEN),
            state=lambda s: "PreparingRebalance" if 60 <= s < 90 else "Stable",
        ),
        expect=[Expect("warning")],
        check=all_of(evidence(metadata_bytes=600_000), _since_start),
    ),
    Case(
        "asr-trend",
        "an hour of growth from 300,000 to 400,000 bytes (29% to 38%: under the share, past "
        "the 25% floor): 100,000 bytes/h reaches the limit in about 6.5 h, within the 7-day "
        "horizon",
        KIND,
        _history("asr-trend", _growing(300_000, 400_000), until=LONG, step=60),
        expect=[Expect("warning")],
        check=all_of(
            evidence(variant="trend", metadata_bytes=400_000, growth_bytes_per_hour=100_000.0),
            _projected(6.4, 6.6),
            explains(
                "is 400000 bytes, 38% of the offsets topic's max.message.bytes 1048588, "
                "growing 100000 bytes/h: at that pace it reaches the limit in 6.5 h",
                absent="warning at",
            ),
        ),
    ),
    Case(
        "asr-small",
        "4 stream threads with 8,000 bytes of metadata in all: nowhere near the limit",
        KIND,
        _history("asr-small", lambda s: _members(_even(4, 8_000))),
    ),
    Case(
        "asr-one-poll-spike",
        "small for minutes, then one poll at 600,000 bytes: a run of one poll is shorter than "
        "the evaluation window",
        KIND,
        _history(
            "asr-one-poll-spike",
            lambda s: _members(UNEVEN if s >= SHORT else _even(4, 8_000)),
        ),
    ),
    Case(
        "asr-growth-far-from-limit",
        "a small group stepping from 20,000 to 60,000 bytes within the hour (an instance "
        "added): a line through it reaches the limit within days, but at 6% of the limit "
        "it is under the 25% floor: one step is not a trend",
        KIND,
        _history(
            "asr-growth-far-from-limit",
            lambda s: _members(_even(4, 20_000 if s < LONG / 2 else 60_000)),
            until=LONG,
            step=60,
        ),
    ),
    Case(
        "asr-slow-growth",
        "400,000 bytes (38%) growing 1,000 bytes/h: about 27 days to the limit, beyond the "
        "7-day horizon",
        KIND,
        _history("asr-slow-growth", _growing(399_000, 400_000), until=LONG, step=60),
    ),
    Case(
        "asr-growth-too-short",
        "steep growth (380,000 to 450,000 bytes in 20 minutes) but no more history: a line "
        "through less than half the look-back says too little",
        KIND,
        _history(
            "asr-growth-too-short",
            lambda s: _members(_even(4, round(380_000 + 70_000 * s / 1200))),
            until=1200,
            step=60,
        ),
    ),
    Case(
        "asr-unknown-limit",
        "900,000 bytes but the agent could not read the offsets topic's max.message.bytes: "
        "no limit, no ratio, no judgement",
        KIND,
        _history("asr-unknown-limit", lambda s: _members(_even(4, 900_000)), limit=None),
    ),
    Case(
        "asr-mid-rebalance",
        "over the share, but PreparingRebalance at the evaluation: the members come without "
        "metadata, so this poll is not judged (its empty metadata is not a size)",
        KIND,
        _history(
            "asr-mid-rebalance",
            lambda s: _members(UNEVEN),
            state=lambda s: "PreparingRebalance" if s >= SHORT else "Stable",
        ),
    ),
    Case(
        "asr-kip1071",
        "a KIP-1071 streams group: the broker keeps its members and assignments as records "
        "of their own and the agent reports no blobs (sizes 0): nothing to judge",
        KIND,
        _history(
            "asr-kip1071",
            lambda s: [
                dataclasses.replace(m, subscription_bytes=0, assignment_bytes=0)
                for m in _members(_even(4, 8_000))
            ],
            group_type="streams",
        ),
    ),
    Case(
        "asr-kip848-with-sizes",
        "a KIP-848 consumer group reporting sizes (classic members mid-upgrade carry "
        "metadata): still no single group record to outgrow, so not judged",
        KIND,
        _history("asr-kip848-with-sizes", lambda s: _members(UNEVEN), group_type="consumer"),
    ),
]
