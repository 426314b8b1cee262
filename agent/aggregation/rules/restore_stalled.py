"""restore_stalled: not ported yet (a stub that cannot judge)."""

from agent.aggregation.rules.base import Evaluation, Judgement

KIND = "restore_stalled"


def judge(ev: Evaluation) -> Judgement:
    return Judgement(KIND, judged=False)
