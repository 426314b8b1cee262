"""idle_members: not ported yet (a stub that cannot judge)."""

from agent.aggregation.rules.base import Evaluation, Judgement

KIND = "idle_members"


def judge(ev: Evaluation) -> Judgement:
    return Judgement(KIND, judged=False)
