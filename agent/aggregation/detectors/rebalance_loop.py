"""rebalance_loop (warning): the group rebalances again and again, or is mostly rebalancing.

Events: exact generation (or KIP-848 epoch) changes where the snapshots carry
them, else inferred from consecutive snapshots (the group entered a
rebalancing state, or its members or assignment changed in between).
Generations that happened before the agent first polled the group (listed by
its first snapshot, or later with a time before that poll) are not counted.
It fires on at least ``loop_events`` unexplained events within
``loop_window`` (counted when the group is Stable: mid-rebalance, a newcomer
that explains it is not visible yet), or the group in a rebalancing state
(``tables.REBALANCING_STATES``) for at least ``loop_unstable_ratio`` of the
window, unless that is legitimate churn. An Empty group is not rebalancing:
a group whose offsets are committed with no member (a batch job, a stopped
app) is Empty all along, and that is ``no_live_consumers``' business, not a
loop (the 200-group soak, bench/soak.py, found 180 such groups flagged).
But an Empty group whose exact generation rose between two polls that both
saw it Empty had members join and leave again in between, unseen: a lone
stream thread overrunning ``max.poll.interval.ms`` (seen live in
bench/detection_latency.py: out of the group within seconds of each re-join,
so no 10 s poll ever saw it Stable) or a crash loop. Such a group is judged
at its Empty polls too: the events count there when the window holds at
least one rebalance between Empty polls, and a group that stays Empty with
its generation still closes the finding once its window is quiet.
Legitimate churn:

* KIP-441 probing rebalances: the assignment before announced a next
  rebalance and the members are the same after it;
* rolling restarts and scale-out/in that settle: every member identity (a
  Streams process and thread index, else a client id) was replaced at most
  once, and no newcomer came and went again within the window (members as
  the Stable polls show them, and every poll of a KIP-848 or KIP-1071 group,
  whose broker describes its members in every state). Each member
  that joined or left explains up to ``EVENTS_PER_MEMBER_CHANGE`` events
  (the join or leave itself, the follow-up rebalance of cooperative
  assignment, and one more for the task movements that follow), but never
  one between two Empty polls (members came and went unseen there: so a
  loop brought in by a restart is not hidden behind that restart);
* a group forming as the agent first sees it (its first snapshot is in a
  rebalance): while it forms the rule does not hold, and the rebalances
  until its first Stable snapshot are explained, within ``loop_window``.

Root-cause hints in the evidence: the same clients re-joining under new
member ids (processing longer than ``max.poll.interval.ms``), identities that
left and came back while their old member lingered (a crash loop), and the
group's metadata against ``__consumer_offsets`` ``max.message.bytes``
(KAFKA-7149).
"""

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from agent.aggregation.candidates import Context, Detection, candidates, rounded
from agent.aggregation.tables import KEYS
from agent.aggregation.windows import (
    by_series,
    evaluated,
    looking_back,
    pair_with_lookback,
    reused,
)

KIND = "rebalance_loop"
EVENTS_PER_MEMBER_CHANGE = 3
_MIN_REJOINS = 3  # member ids of one identity within the window that make a loop, not a restart


@dataclass(frozen=True)
class RebalanceResults:
    detection: Detection
    counts: DataFrame  # KEYS, events, unstable_ratio


def detect_rebalance_loop(ctx: Context) -> Detection:
    return rebalance_results(ctx).detection


def rebalance_events(ctx: Context) -> DataFrame:
    """Per snapshot: rebalance events since the previous one of its series, and whether
    they were probing rebalances (KIP-441), plus the time the group spent rebalancing."""
    g = ctx.tables.groups
    order = by_series()
    previous = order.rowsBetween(Window.unboundedPreceding, -1)
    following = order.rowsBetween(0, Window.unboundedFollowing)

    def before(column: str) -> Column:
        return F.lag(column).over(order)

    exact = (
        F.when(
            F.col("generation").isNotNull() & before("generation").isNotNull(),
            F.greatest(F.col("generation") - before("generation"), F.lit(0)),
        )
        .when(
            F.col("group_epoch").isNotNull() & before("group_epoch").isNotNull(),
            F.greatest(F.col("group_epoch") - before("group_epoch"), F.lit(0)),
        )
        # A series' first snapshot has no previous one: the generations it lists
        # happened before the agent watched (the group being created, say). So did
        # those a later snapshot lists with a time before the series' first poll: the
        # agent may learn a group's generations a poll or two after its members (seen
        # live: a group created just before, Stable with no generation for two polls,
        # then generations 0-2 at once, two of them from before the first poll).
        .when(
            (F.size("rebalance_gens") > 0) & before("t").isNotNull(),
            F.size(
                F.filter(
                    "rebalance_ats",
                    lambda at: F.coalesce(at >= F.col("series_start"), F.lit(True)),
                )
            ),
        )
    )
    changed_between_polls = (
        ~F.col("rebalancing")
        & ~before("rebalancing")
        & (
            (F.col("member_ids") != before("member_ids"))
            | (F.col("assignment_fp") != before("assignment_fp"))
        )
    )
    inferred = (
        F.when(before("t").isNull(), F.lit(0))
        .when(F.col("rebalancing") & ~before("rebalancing"), F.lit(1))
        .when(changed_between_polls, F.lit(1))
        .otherwise(F.lit(0))
    )
    stable_members = F.when(F.col("stable"), F.col("member_ids"))
    stayed_empty = (F.col("state") == "Empty") & (before("state") == "Empty")
    marked = (
        g.withColumn(
            "series_start", F.min("t").over(order.rowsBetween(Window.unboundedPreceding, 0))
        )
        .withColumn("exact_events", exact)
        .withColumn("events", F.coalesce(F.col("exact_events"), inferred))
        .withColumn("stayed_empty", F.coalesce(stayed_empty, F.lit(False)))
        # Members that joined and left between two polls that saw none: only the exact
        # generations tell of them.
        .withColumn(
            "unseen_events",
            F.when(F.col("stayed_empty"), F.coalesce(F.col("exact_events"), F.lit(0))).otherwise(
                F.lit(0)
            ),
        )
        .withColumn("members_before", F.last(stable_members, ignorenulls=True).over(previous))
        .withColumn(
            "probe_announced",
            F.last(
                F.when(F.col("stable"), F.col("next_rebalance_scheduled")), ignorenulls=True
            ).over(previous),
        )
        .withColumn("members_after", F.first(stable_members, ignorenulls=True).over(following))
        .withColumn(
            "unstable_seconds",
            F.when(
                F.coalesce(before("rebalancing"), F.lit(False)), F.col("t") - before("t")
            ).otherwise(F.lit(0.0)),
        )
    )
    probing = (
        (F.col("events") > 0)
        & F.coalesce(F.col("probe_announced"), F.lit(False))
        & F.coalesce(F.col("members_before") == F.col("members_after"), F.lit(False))
    )
    in_formation = _in_formation(ctx.params.loop_window)
    return (
        marked.withColumn("probing_events", F.when(probing, F.col("events")).otherwise(0))
        .withColumn("forming", in_formation & ~F.col("stable"))
        .withColumn("formation_events", F.when(in_formation, F.col("events")).otherwise(0))
        .withColumn(
            "formation_unstable_seconds",
            F.when(in_formation, F.col("unstable_seconds")).otherwise(F.lit(0.0)),
        )
    )


def _in_formation(window: float) -> Column:
    """The group forming as the agent first sees it: its series began with the group
    rebalancing, and this snapshot is before its first Stable one, or that one (the last
    step of forming), within ``window`` of the series' start (a group that takes longer
    to form is looping). A series that began Stable saw the group formed already.

    A history cut mid-rebalance looks like a series beginning: the job keeps twice the
    loop window (``DetectorsConfig.history_retention``), so a cut is always more than a
    window before any evaluation's window."""
    so_far = by_series().rowsBetween(Window.unboundedPreceding, Window.currentRow)
    before = by_series().rowsBetween(Window.unboundedPreceding, -1)
    began_unstable = ~F.first("stable").over(so_far)
    stable_before = F.max(F.col("stable").cast("int")).over(before)
    young = F.col("t") - F.min("t").over(so_far) <= window
    return began_unstable & (F.coalesce(stable_before, F.lit(0)) == 0) & young


def membership_churn(ctx: Context) -> DataFrame:
    """Per evaluation: how the group's members changed within the loop window."""
    window = ctx.params.loop_window
    evaluations = ctx.evaluations.select(*KEYS)
    # Who the members are is known at Stable polls, and at every poll of a group whose
    # broker assigns (KIP-848, KIP-1071): such a group is Stable again right after a
    # member leaves, so its Stable polls alone can miss the change that explains the
    # epochs that follow (seen in a rolling restart of a streams group).
    described = ctx.tables.members.where((F.col("state") == "Stable") | F.col("broker_assigned"))
    # Members of one identity in the same snapshot: an old member id lingering beside
    # its replacement. Counted per snapshot before pairing, so the pairs (every member
    # row of the window, for every evaluation: the biggest rows of a replay) are read by
    # one aggregate, and the rest is derived from its few rows per member.
    members = described.select(
        *KEYS,
        "member_id",
        "identity",
        "client_id",
        F.count("member_id").over(Window.partitionBy(*KEYS, "identity")).alias("simultaneous"),
    )
    paired = pair_with_lookback(evaluations, members, window)
    member_presence = reused(
        paired.groupBy(*KEYS, "identity", "member_id").agg(
            F.first("client_id").alias("client_id"),
            F.min("row_t").alias("m_first"),
            F.max("row_t").alias("m_last"),
            F.max("simultaneous").alias("simultaneous"),
        )
    )
    samples = member_presence.groupBy(*KEYS).agg(
        F.min("m_first").alias("first_sample"), F.max("m_last").alias("last_sample")
    )
    identities = (
        member_presence.groupBy(*KEYS, "identity")
        .agg(
            F.count("member_id").alias("member_ids"),
            F.first("client_id").alias("client_id"),
            F.min("m_first").alias("first_seen"),
            F.max("m_last").alias("last_seen"),
            (F.max("simultaneous") > 1).alias("overlapping"),
        )
        .join(samples, list(KEYS))
    )
    transient = (F.col("first_seen") > F.col("first_sample")) & (
        F.col("last_seen") < F.col("last_sample")
    )
    changes = (
        member_presence.groupBy(*KEYS, "member_id")
        .agg(F.min("m_first").alias("m_first"), F.max("m_last").alias("m_last"))
        .join(samples, list(KEYS))
        .groupBy(*KEYS)
        .agg(
            F.sum(
                (
                    (F.col("m_first") > F.col("first_sample"))
                    | (F.col("m_last") < F.col("last_sample"))
                ).cast("int")
            ).alias("member_changes")
        )
    )
    per_eval = identities.groupBy(*KEYS).agg(
        F.sort_array(
            F.collect_list(
                F.when(
                    F.col("member_ids") >= _MIN_REJOINS,
                    F.struct(
                        F.col("client_id"),
                        F.col("member_ids"),
                        F.col("overlapping").alias("old_member_lingered"),
                    ),
                )
            )
        ).alias("rejoining"),
        F.sort_array(F.collect_list(F.when(transient, F.col("identity")))).alias("came_and_went"),
    )
    return per_eval.join(changes, list(KEYS))


def rebalance_results(ctx: Context) -> RebalanceResults:
    p = ctx.params
    events = rebalance_events(ctx)
    window = looking_back(p.loop_window)
    summed = reused(
        evaluated(
            events.withColumn("events_in_window", F.sum("events").over(window))
            .withColumn("probing_in_window", F.sum("probing_events").over(window))
            .withColumn("unseen_in_window", F.sum("unseen_events").over(window))
            .withColumn("formation_in_window", F.sum("formation_events").over(window))
            .withColumn("unstable_in_window", F.sum("unstable_seconds").over(window))
            .withColumn(
                "formation_unstable_in_window",
                F.sum("formation_unstable_seconds").over(window),
            )
            .withColumn("exact", F.max(F.col("exact_events").isNotNull().cast("int")).over(window))
            .withColumn("window_start", F.min("t").over(window))
            # Members come without metadata mid-rebalance: the largest size seen counts.
            .withColumn("metadata_bytes", F.max("metadata_bytes").over(window))
            .withColumn("max_message_bytes", F.max("max_message_bytes").over(window)),
            ctx.evaluations,
        )
    )
    churn = membership_churn(ctx)
    judged = summed.join(churn, list(KEYS), "left").select(
        "*",
        F.coalesce(F.col("member_changes"), F.lit(0)).alias("changes"),
        F.coalesce(F.col("rejoining"), F.array()).alias("rejoins"),
        F.coalesce(F.col("came_and_went"), F.array()).alias("transients"),
    )
    legitimate = (F.size("rejoins") == 0) & (F.size("transients") == 0) & (F.col("changes") > 0)
    # The rebalances of a group forming (as the agent saw it form) are no loop either.
    beyond_probing = (
        F.col("events_in_window") - F.col("probing_in_window") - F.col("formation_in_window")
    )
    # Rebalances between two Empty polls are members that joined and left again unseen:
    # no member change the Stable polls show explains them. Without this, the restart that
    # brought a looping version in (a deploy) explained the loop's first six rebalances,
    # and the loop was found only once the restart left the window (bench/
    # detection_latency.py: 611 s after the fault).
    explainable = F.greatest(beyond_probing - F.col("unseen_in_window"), F.lit(0))
    churn_explained = F.when(
        legitimate, F.least(explainable, F.col("changes") * EVENTS_PER_MEMBER_CHANGE)
    ).otherwise(F.lit(0))
    unstable_ratio = F.least(F.col("unstable_in_window") / F.lit(p.loop_window), F.lit(1.0))
    unstable_beyond_formation = F.least(
        (F.col("unstable_in_window") - F.col("formation_unstable_in_window"))
        / F.lit(p.loop_window),
        F.lit(1.0),
    )
    metadata_ratio = F.try_divide(F.col("metadata_bytes"), F.col("max_message_bytes"))
    judged = reused(
        judged.select(
            "*",
            (beyond_probing - churn_explained).alias("unexplained"),
            churn_explained.alias("churn_explained"),
            unstable_ratio.alias("unstable_ratio"),
            unstable_beyond_formation.alias("unstable_beyond_formation"),
            legitimate.alias("legitimate_churn"),
            metadata_ratio.alias("metadata_ratio"),
        )
    )
    # Mid-rebalance the members that explain it are not visible yet (a newcomer comes
    # undecoded): the rebalances are counted when the group is Stable again, or while it
    # stays Empty once members were seen to come and go between its Empty polls.
    churning_unseen = F.col("stayed_empty") & (F.col("unseen_in_window") > 0)
    too_many = (F.col("stable") | churning_unseen) & (F.col("unexplained") >= p.loop_events)
    too_unstable = (F.col("unstable_beyond_formation") >= p.loop_unstable_ratio) & ~F.col(
        "legitimate_churn"
    )
    holds = judged.where(
        # A group the agent sees forming is not looping (yet): see ``_in_formation``.
        ~F.col("forming") & (too_many | too_unstable)
    )
    cause = (
        F.when(
            F.coalesce(F.col("metadata_ratio") >= p.metadata_size_ratio, F.lit(False)),
            F.lit("group metadata near __consumer_offsets max.message.bytes (KAFKA-7149)"),
        )
        .when(
            F.exists("rejoins", lambda r: ~r["old_member_lingered"]),
            F.lit("members re-join under new ids: processing exceeds max.poll.interval.ms"),
        )
        .when(
            F.exists("rejoins", lambda r: r["old_member_lingered"]) | (F.size("transients") > 0),
            F.lit("members leave and come back: a crash loop"),
        )
        .when(
            F.col("unseen_in_window") > 0,
            F.lit(
                "members join and leave again between polls: processing longer than "
                "max.poll.interval.ms, or instances crash-looping"
            ),
        )
        .otherwise(F.lit("unknown"))
    )
    found = candidates(
        holds.withColumn("cause", cause),
        kind=KIND,
        severity=F.lit("warning"),
        explanation=F.format_string(
            "group %s rebalanced %d times in %.0f s (%d explained by probing, the group "
            "forming or membership changes) and was rebalancing %.0f%% of the time; likely "
            "cause: %s",
            F.col("group"),
            F.col("events_in_window"),
            F.lit(p.loop_window),
            F.col("probing_in_window") + F.col("formation_in_window") + F.col("churn_explained"),
            F.col("unstable_ratio") * 100,
            F.col("cause"),
        ),
        evidence=F.struct(
            F.col("events_in_window").alias("rebalances"),
            F.col("probing_in_window").alias("probing_rebalances"),
            F.col("formation_in_window").alias("group_forming_rebalances"),
            F.col("churn_explained").alias("explained_by_membership_changes"),
            F.col("unexplained").alias("unexplained_rebalances"),
            F.col("unseen_in_window").alias("rebalances_between_empty_polls"),
            F.col("changes").alias("member_changes"),
            rounded("unstable_ratio").alias("unstable_ratio"),
            F.lit(p.loop_window).alias("window_seconds"),
            F.when(F.col("exact") > 0, F.lit("exact"))
            .otherwise(F.lit("inferred"))
            .alias("events_from"),
            F.col("cause").alias("likely_cause"),
            F.col("rejoins").alias("members_rejoining"),
            F.col("transients").alias("members_came_and_went"),
            F.col("metadata_bytes").alias("group_metadata_bytes"),
            F.col("max_message_bytes").alias("offsets_topic_max_message_bytes"),
            rounded("metadata_ratio").alias("metadata_ratio"),
        ),
    )
    counts = judged.select(
        *KEYS,
        F.col("events_in_window").cast("double").alias("events"),
        F.col("unstable_ratio").cast("double").alias("unstable_ratio"),
    )
    # Judged when Stable, when it stayed Empty for a poll interval (no member hidden
    # mid-join), or when it holds (too unstable): a long rebalance neither opens nor
    # closes a finding by itself.
    judged_at = judged.where(F.col("stable") | F.col("stayed_empty")).select(*KEYS)
    return RebalanceResults(Detection(KIND, found, judged_at), counts)
