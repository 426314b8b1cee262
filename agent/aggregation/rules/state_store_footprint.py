"""state_store_footprint: not ported yet (a stub that cannot judge)."""

from agent.aggregation.rules.base import Evaluation, Judgement

KIND = "state_store_footprint"


def judge(ev: Evaluation) -> Judgement:
    return Judgement(KIND, judged=False)
