"""Which rule leaves what to which: the one table of it.

A rule that would say again what another says of the same poll (lag that a
rebalance loop, a stalled restore or a dead thread already explains) leaves it to
that rule. It runs after the rules it leaves to (``GROUP_RULES``' order, checked by
tests/unit/aggregation/test_precedence.py) and reads their word only through
``Evaluation.said`` and ``Evaluation.is_open``, which refuse a kind this table does
not list for the rule asking. What each leaves, and why, is on its page in
docs/rules/.
"""

from collections.abc import Mapping

from agent.model.findings import Kind

# Keyed by the kind of the rule that leaves (each one of GROUP_RULES: the test checks).
LEAVES_TO: Mapping[str, tuple[Kind, ...]] = {
    # Threads out between a loop's re-joins are not dead.
    "stream_threads_dead": ("rebalance_loop",),
    # Lag a restore, a dead thread or a loop explains is not too few threads.
    "threads_fewer_than_tasks": ("restore_stalled", "stream_threads_dead", "rebalance_loop"),
    # Partitions stalled by a loop or a restore, or stopped with the whole app, are those
    # rules' findings.
    "consumer_status": ("rebalance_loop", "restore_stalled", "no_live_consumers"),
}


class PrecedenceError(Exception):
    """A rule asked for the word of one it does not leave anything to."""


def check_leaves_to(rule: str, other: str) -> None:
    """Refuse ``rule`` reading ``other``'s judgement unless the table lets it."""
    if other != rule and other not in LEAVES_TO.get(rule, ()):
        raise PrecedenceError(
            f"{rule or 'a rule'} reads {other}'s judgement, but "
            f"rules.precedence.LEAVES_TO does not list {other} for it"
        )
