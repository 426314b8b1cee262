"""Benchmark: the rebalancing advice of ``ksmon explain`` (``agent/explain/balance.py``)
on generated groups, from one that the exact search solves to ones the heuristic takes.

Each group: instances x threads members, tasks with loads drawn from a skewed mix (most
cold, some hot), assigned at random as the starting point. Reports the time to advise,
the busiest instance's load before and after, the lower bound no assignment can beat
(the biggest task, or the total spread evenly over the instances), and the moves.

    .venv/bin/python bench/balance_advice.py
"""

import json
import random
import time

from agent.explain.balance import balance

SHAPES = ((8, 2, 2), (64, 4, 4), (200, 8, 3), (400, 12, 4), (1000, 20, 4))


def main() -> None:
    for tasks, instances, threads in SHAPES:
        rnd = random.Random(tasks)  # noqa: S311 - generated loads, no secret
        members = {f"i{i}-t{t}": f"i{i}" for i in range(instances) for t in range(threads)}
        names = sorted(members)
        loads = {f"0_{n}": rnd.choice([1, 2, 5, 10, 200]) * rnd.random() for n in range(tasks)}
        current = {task: rnd.choice(names) for task in loads}
        started = time.perf_counter()
        advice = balance(loads, members, current)
        seconds = time.perf_counter() - started
        biggest = max(loads.values())
        bound = max(biggest, sum(loads.values()) / instances)
        report = {
            "tasks": tasks,
            "instances": instances,
            "threads_per_instance": threads,
            "seconds": round(seconds, 3),
            "exact": advice.exact,
            "busiest_instance_before": round(advice.before_instance_max, 1),
            "busiest_instance_after": round(advice.after_instance_max, 1),
            "lower_bound": round(bound, 1),
            "moves": len(advice.moves),
        }
        print(json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
