"""assignment_size_risk: not ported yet (a stub that cannot judge)."""

from agent.aggregation.rules.base import Evaluation, Judgement

KIND = "assignment_size_risk"


def judge(ev: Evaluation) -> Judgement:
    return Judgement(KIND, judged=False)
