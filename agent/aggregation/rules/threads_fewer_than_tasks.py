"""threads_fewer_than_tasks: not ported yet (a stub that cannot judge)."""

from agent.aggregation.rules.base import Evaluation, Judgement

KIND = "threads_fewer_than_tasks"


def judge(ev: Evaluation) -> Judgement:
    return Judgement(KIND, judged=False)
