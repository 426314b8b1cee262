"""rebalance_loop: not ported yet (a stub that cannot judge)."""

from agent.aggregation.rules.base import Evaluation, Judgement

KIND = "rebalance_loop"


def judge(ev: Evaluation) -> Judgement:
    return Judgement(KIND, judged=False)
