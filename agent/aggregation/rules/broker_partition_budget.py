"""broker_partition_budget: not ported yet (a stub that cannot judge)."""

from agent.aggregation.rules.base import Evaluation, Judgement

KIND = "broker_partition_budget"


def judge(ev: Evaluation) -> Judgement:
    return Judgement(KIND, judged=False)
