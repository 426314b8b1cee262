"""internal_topic_budget: not ported yet (a stub that cannot judge)."""

from agent.aggregation.rules.base import Evaluation, Judgement

KIND = "internal_topic_budget"


def judge(ev: Evaluation) -> Judgement:
    return Judgement(KIND, judged=False)
