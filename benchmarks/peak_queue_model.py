"""Issue 42's candidate: the serving peak from an M/G/c queue model fed the recorded service times, calibrated by
the steps' late counts (one load scale, kappa), on the grid of ``peak_estimate_grid.py``. A prototype, not the package's
estimator: benchmarks/NOTES.md, "A queue-model estimate, prototyped", says what it gives and what it lacks.

Run:  .venv/bin/python benchmarks/peak_queue_model.py [--searches 20] [--queues 0,3,16] [--fixed]

The model is simulated step by step from an empty queue (as every LoadGen step starts): a table of cumulative late
counts at log-spaced loads. The 90% interval inverts the test on the steps' total late count (every kappa whose 5%
tails hold the observed total); the peak is the model's steady-state peak over kappa. ``--fixed``: 19 steps at fixed
loads 4% either side of the true peak instead of the search's placing.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

TESTS = Path(__file__).resolve().parent.parent / "tests"
sys.path[:0] = [str(TESTS)]

from helpers.queue_model import PERCENTILE, md_c_latencies, md_c_true_peak  # noqa: E402
from trtbench.scenarios.serving.loadgen import peak_estimate as pe  # noqa: E402
from peak_estimate_grid import QUEUES, held  # noqa: E402

LEVEL = 0.9
REPS = 1000  # simulated runs per table load
TABLE_LO, TABLE_HI, TABLE_POINTS = 0.25, 1.6, 100  # table loads, over the model's capacity
KAPPA_LO, KAPPA_HI, KAPPA_POINTS = 0.5, 2.0, 400
LONG = 1_000_000  # queries of the steady-state run
BUDGET = 9500  # queries in steps a search (no confirming run)


@dataclass(frozen=True)
class Model:
    services: tuple  # seconds, the recorded sample
    servers: int
    bound_s: float

    @property
    def capacity(self) -> float:
        return self.servers / float(np.mean(self.services))


def _simulate(model: Model, loads: np.ndarray, gaps: np.ndarray, services: np.ndarray) -> np.ndarray:
    """Late flags (loads x reps x queries) of runs from an empty queue; gaps, services: reps x queries."""
    reps, n = gaps.shape
    k = len(loads)
    arrivals = (np.cumsum(gaps, 1)[None, :, :] / loads[:, None, None]).reshape(k * reps, n)
    svc = np.broadcast_to(services[None], (k, reps, n)).reshape(k * reps, n)
    c = model.servers
    late = np.empty((k * reps, n), bool)
    if len(set(model.services)) == 1:
        # deterministic: query i is served after query i - c ends (md_c_latencies' recursion)
        s = model.services[0]
        rows = -(-n // c)
        pad = rows * c - n
        a = np.concatenate([arrivals, np.repeat(arrivals[:, -1:], pad, 1) + 1e9], 1).reshape(k * reps, rows, c)
        j = np.arange(rows)[None, :, None]
        ends = (j + 1) * s + np.maximum.accumulate(a - j * s, axis=1)
        lat = (ends - a).reshape(k * reps, rows * c)[:, :n]
        return (lat > model.bound_s).reshape(k, reps, n)
    free = np.zeros((k * reps, c))
    idx = np.arange(k * reps)
    for i in range(n):
        first = free.argmin(1)
        start = np.maximum(arrivals[:, i], free[idx, first])
        end = start + svc[:, i]
        free[idx, first] = end
        late[:, i] = end - arrivals[:, i] > model.bound_s
    return late.reshape(k, reps, n)


@lru_cache(maxsize=8)
def table(model: Model, n_max: int, seed: int = 11):
    """Cumulative late counts (loads x reps x queries) at log-spaced loads, and those loads' logs."""
    rng = np.random.default_rng(seed)
    loads = model.capacity * np.exp(np.linspace(math.log(TABLE_LO), math.log(TABLE_HI), TABLE_POINTS))
    gaps = rng.exponential(1.0, (REPS, n_max))
    services = rng.choice(np.asarray(model.services), (REPS, n_max))
    late = _simulate(model, loads, gaps, services)
    return np.cumsum(late, 2, dtype=np.int32), np.log(loads)


@lru_cache(maxsize=8)
def steady_peak(model: Model, allowed: float) -> float:
    """The load where the steady-state late share reaches ``allowed`` (one long run per load, common draws)."""
    rng = np.random.default_rng(3)
    gaps = rng.exponential(1.0, (1, LONG))
    services = rng.choice(np.asarray(model.services), (1, LONG))
    lo, hi = 0.3 * model.capacity, model.capacity
    for _ in range(4):
        loads = np.linspace(lo, hi, 12)
        share = _simulate(model, loads, gaps, services)[:, 0, 2000:].mean(1)
        over = np.nonzero(share > allowed)[0]
        first = over[0] if len(over) else len(loads)
        lo, hi = loads[max(first - 1, 0)], loads[min(first, len(loads) - 1)]
    return float((lo + hi) / 2)


def estimate(model: Model, qps: np.ndarray, queries: np.ndarray, late: np.ndarray, allowed: float,
             seed: int = 5) -> pe.Estimate:
    """kappa by inverting the test on the total late count; the peak is the model's over kappa."""
    n_max = int(queries.max())
    cum, log_loads = table(model, max(n_max, 500))
    peak_model = steady_peak(model, allowed)
    rng = np.random.default_rng(seed)
    steps = len(qps)
    perm = np.stack([rng.permutation(REPS) for _ in range(steps)])  # steps x draws
    kappas = np.exp(np.linspace(math.log(KAPPA_LO), math.log(KAPPA_HI), KAPPA_POINTS))
    x = np.log(kappas)[:, None] + np.log(qps)[None, :]  # kappa x steps
    pos = np.clip((x - log_loads[0]) / (log_loads[1] - log_loads[0]), 0, len(log_loads) - 1.000001)
    i0 = np.floor(pos).astype(int)
    w = pos - i0
    total = np.zeros((KAPPA_POINTS, REPS))
    for j in range(steps):
        counts = cum[:, perm[j], queries[j] - 1]  # loads x draws
        total += (1 - w[:, j, None]) * counts[i0[:, j]] + w[:, j, None] * counts[i0[:, j] + 1]
    observed = float(late.sum())
    below = (total < observed - 1e-9).mean(1)
    equal = (np.abs(total - observed) <= 1e-9).mean(1)
    at_most, at_least = below + equal, 1 - below
    mid = below + 0.5 * equal
    a = (1 - LEVEL) / 2
    ok_hi = np.nonzero(at_most >= a)[0]
    ok_lo = np.nonzero(at_least >= a)[0]
    kappa_hi = kappas[ok_hi[-1]] if len(ok_hi) else kappas[0]
    kappa_lo = kappas[ok_lo[0]] if len(ok_lo) else kappas[-1]
    centre = np.nonzero(mid <= 0.5)[0]
    kappa = kappas[centre[0]] if len(centre) else kappas[-1]
    return pe.Estimate(peak_model / kappa, peak_model / kappa_hi, peak_model / kappa_lo)


def steps_estimate(model: Model, steps: list) -> pe.Estimate:
    """:func:`estimate` over the search's steps."""
    return estimate(model, np.array([s.qps for s in steps]), np.array([s.queries for s in steps]),
                    np.array([s.late.sum() for s in steps], float), 1 - PERCENTILE)


def search(model: Model, run, plan: pe.SearchPlan) -> pe.Estimate:
    """Bisection until a step is late, then steps 4% either side of the running estimate, until the budget."""
    steps, used, point = [], 0, math.nan
    while True:
        if math.isfinite(point):
            qps = min(point * (1 + (pe.SPREAD if len(steps) % 2 else -pe.SPREAD)), plan.capacity)
        else:
            qps = (pe._bracket(steps, plan) or pe.Bracket(0.0, plan.capacity)).qps
        queries = plan.queries_at(qps)
        if used + queries > BUDGET:
            return steps_estimate(model, steps)
        steps.append(pe.Step(qps, len(steps), np.asarray(run(qps, queries), dtype=bool)))
        used += queries
        point = steps_estimate(model, steps).qps if any(s.late.any() for s in steps) else math.nan


def fixed(model: Model, run, peak: float) -> pe.Estimate:
    """19 steps of 500 queries alternately 4% above and below the true peak."""
    loads = peak * np.array([0.96 if i % 2 else 1.04 for i in range(19)])
    late = np.array([run(qps, 500).sum() for qps in loads], float)
    return estimate(model, loads, np.full(19, 500), late, 1 - PERCENTILE)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--searches", type=int, default=20)
    parser.add_argument("--queues", default="", help="comma-separated indices into QUEUES (default: all)")
    parser.add_argument("--fixed", action="store_true", help="steps at fixed loads around the true peak")
    args = parser.parse_args()
    picked = [int(i) for i in args.queues.split(",")] if args.queues else range(len(QUEUES))
    print("| queue | true peak (model's) | median found / true | covers | width |")
    print("|---|---|---|---|---|")
    for i in picked:
        servers, service_ms, bound_ms = QUEUES[i]
        service_s, bound_s = service_ms / 1e3, bound_ms / 1e3
        started = time.monotonic()
        peak = md_c_true_peak(service_s, servers, bound_s)
        model = Model((service_s,), servers, bound_s)
        rng = np.random.default_rng(5000 + i)
        plan = pe.SearchPlan(1 - PERCENTILE, servers / service_s, 500, 0.1, 0.02, pe.Budget(10_000))

        def run(qps: float, queries: int) -> np.ndarray:
            return md_c_latencies(qps, service_s, servers, rng.exponential(1.0, queries)) > bound_s
        found = [fixed(model, run, peak) if args.fixed else search(model, run, plan) for _ in range(args.searches)]
        got = held(found, peak)
        print(f"| {servers} worker(s), {service_ms:g} ms, bound {bound_ms:g} ms | {peak:.1f} "
              f"({steady_peak(model, 1 - PERCENTILE):.1f}) | {got.ratio:.3f} | {got.covered:.2f} | {got.width:.3f} | "
              f"({time.monotonic() - started:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
