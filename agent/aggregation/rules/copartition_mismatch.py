"""copartition_mismatch: not ported yet (a stub that cannot judge)."""

from agent.aggregation.rules.base import Evaluation, Judgement

KIND = "copartition_mismatch"


def judge(ev: Evaluation) -> Judgement:
    return Judgement(KIND, judged=False)
