"""stream_threads_dead: not ported yet (a stub that cannot judge)."""

from agent.aggregation.rules.base import Evaluation, Judgement

KIND = "stream_threads_dead"


def judge(ev: Evaluation) -> Judgement:
    return Judgement(KIND, judged=False)
