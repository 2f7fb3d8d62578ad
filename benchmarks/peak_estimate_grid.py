"""Does the joint estimate's interval hold on any queue? The serving peak search on a grid of simulated M/D/c queues.

Run:  .venv/bin/python benchmarks/peak_estimate_grid.py [--searches 60] [--step-queries 500] [--budget 10000]

Each queue (workers, service time, bound) is searched ``--searches`` times by ``search_peak`` (the code the serving
scenario runs, its confirming run sized for LoadGen's early stopping as the scenario sizes it), each step a simulated
M/D/c run of its own arrivals (tests/helpers/queue_model.py), and compared with the queue's true peak: the median of
the peak found over the true peak, the share of the 90% intervals that cover the true peak, the median width of the
interval over the peak, the share of searches with a confirming run (the others: the budget could not hold what
LoadGen needs) and the share of searches whose confirming run LoadGen's early stopping passes. Simulated: the
figures do not depend on how busy the machine is (the time they take does).
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

TESTS = Path(__file__).resolve().parent.parent / "tests"
sys.path[:0] = [str(TESTS)]

from helpers.queue_model import PERCENTILE, highest_qps, md_c_latencies, md_c_true_peak  # noqa: E402
from trtbench.core.stats import Interval  # noqa: E402
from trtbench.scenarios.serving.loadgen.peak_estimate import (Budget, CurveReader, QueueReader, SearchPlan,  # noqa: E402
                                                              search_peak)
from trtbench.scenarios.serving.loadgen.queue_model import QueueModel  # noqa: E402
from trtbench.scenarios.serving.loadgen.rule import LOADGEN_CONFIDENCE, early_stopping_queries, passes  # noqa: E402

# (workers, service ms, bound ms): issue 42's five queues, then 1, 2 and 4 workers at bounds of 3-10 service times
QUEUES = ((1, 10.2, 40.0), (2, 10.2, 40.0), (1, 5.0, 30.0), (3, 5.0, 30.0), (2, 20.0, 100.0),
          *((workers, 10.0, 10.0 * times) for workers in (1, 2, 4) for times in (3, 4, 6, 10)))


LOGISTIC = False  # --logistic: no queue model, as for batching and token serving
TRUTH_RUNS, TRUTH_QUERIES = 8, 2_000_000  # long runs averaged for a several-worker queue's true peak


@functools.lru_cache(maxsize=None)
def true_peak(queue: tuple[int, float, float]) -> float:
    """The queue's steady-state peak: Erlang's at 1 worker; else the mean of TRUTH_RUNS long runs' peaks (one run's
    draw moves it by up to 1%: benchmarks/NOTES.md)."""
    servers, service_s, bound_s = queue[0], queue[1] / 1e3, queue[2] / 1e3
    if servers == 1:
        return md_c_true_peak(service_s, servers, bound_s)
    peaks = []
    for seed in range(TRUTH_RUNS):
        gaps = np.random.default_rng(100 + seed).exponential(1.0, TRUTH_QUERIES)
        peaks.append(highest_qps(lambda qps: float(np.mean(md_c_latencies(qps, service_s, servers, gaps) > bound_s)),
                                 servers / service_s))
    return float(np.mean(peaks))


def searches(queue: tuple[int, float, float], count: int, step_queries: int, budget: int, seed: int) -> list:
    """``count`` searches of the queue, every step a simulated run of its own arrivals."""
    servers, service_ms, bound_ms = queue
    service_s, bound_s = service_ms / 1e3, bound_ms / 1e3
    rng = np.random.default_rng(seed)
    model = QueueModel((service_s,), servers, bound_s)
    plan = SearchPlan(1 - PERCENTILE, servers / service_s, step_queries, 0.1, 0.02, Budget(budget),
                      functools.partial(early_stopping_queries, percentile=PERCENTILE),
                      CurveReader() if LOGISTIC else QueueReader(lambda steps: model))

    def step(qps: float, repeat: int, queries: int):
        return md_c_latencies(qps, service_s, servers, rng.exponential(1.0, queries)) > bound_s, None
    return [search_peak(step, plan, rng) for _ in range(count)]


@dataclass(frozen=True)
class Held:
    """How estimates of one queue held: the median over the true peak, the share of intervals covering it, and the
    median width over the peak."""

    ratio: float
    covered: float
    width: float


def held(estimates: list[Interval], peak: float) -> Held:
    """How ``estimates`` held against the true ``peak``."""
    return Held(statistics.median(e.value / peak for e in estimates),
                float(np.mean([e.low <= peak <= e.high for e in estimates])),
                statistics.median(e.rel_width for e in estimates))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--searches", type=int, default=60)
    parser.add_argument("--step-queries", type=int, default=500)
    parser.add_argument("--budget", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1000, help="the first queue's seed; each next queue's is one more")
    parser.add_argument("--queues", default="", help="comma-separated indices into QUEUES (default: all)")
    parser.add_argument("--logistic", action="store_true", help="the logistic curve (no queue model) reads the steps")
    args = parser.parse_args()
    global LOGISTIC
    LOGISTIC = args.logistic
    print(f"{args.searches} searches a queue, steps of {args.step_queries} queries, {args.budget} queries a search")
    print("| queue | median found / true | 90% interval covers | median width | confirmed | LoadGen VALID |")
    print("|---|---|---|---|---|---|")
    for i, queue in enumerate(QUEUES):
        if args.queues and str(i) not in args.queues.split(","):
            continue
        started = time.monotonic()
        peak = true_peak(queue)
        found = searches(queue, args.searches, args.step_queries, args.budget, args.seed + i)
        got = held([s.estimate for s in found], peak)
        confirmed = [s.confirm for s in found if s.confirm is not None]
        valid = sum(passes(int(c.late.sum()), c.queries, PERCENTILE, LOADGEN_CONFIDENCE) for c in confirmed)
        print(f"| {queue[0]} worker(s), {queue[1]:g} ms, bound {queue[2]:g} ms (peak {peak:.1f}) | {got.ratio:.3f} | "
              f"{got.covered:.2f} | {got.width:.3f} | {len(confirmed) / len(found):.2f} | {valid / len(found):.2f} | "
              f"({time.monotonic() - started:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
