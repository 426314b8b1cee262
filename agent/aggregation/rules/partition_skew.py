"""partition_skew: not ported yet (a stub that cannot judge)."""

from agent.aggregation.rules.base import Evaluation, Judgement

KIND = "partition_skew"


def judge(ev: Evaluation) -> Judgement:
    return Judgement(KIND, judged=False)
