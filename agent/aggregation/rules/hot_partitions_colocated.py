"""hot_partitions_colocated: not ported yet (a stub that cannot judge)."""

from agent.aggregation.rules.base import Evaluation, Judgement

KIND = "hot_partitions_colocated"


def judge(ev: Evaluation) -> Judgement:
    return Judgement(KIND, judged=False)
