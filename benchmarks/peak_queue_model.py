"""Issue 42's prototype: the serving peak from an M/G/c queue model fed the recorded service times, calibrated by
the steps' late counts (one load scale, kappa), on the grid of ``peak_estimate_grid.py`` or on saved real searches.
The package's estimator grew from it (trtbench/scenarios/serving/loadgen/queue_model.py); this script keeps what the
package does not: other step designs and intervals, and a load-free stall share read from saved real searches
(benchmarks/NOTES.md, "A queue-model estimate, prototyped" and "The queue model's likelihood, and real runs read
through it").

Run:  .venv/bin/python benchmarks/peak_queue_model.py [--searches 20] [--queues 0,3,16] [--fixed]
          [--likelihood posterior|ratio] [--design 0.96,1.04,1.12]
      .venv/bin/python benchmarks/peak_queue_model.py --real DIR/*.json   (from serving_peak.py --save DIR)

The model, its table of late counts at log-spaced loads after each step size (simulated from an empty queue, as every
LoadGen step starts) and its binned likelihood are the package's (queue_model.py). Without ``--likelihood`` the 90%
interval inverts the test on the steps' total late count; with it, each step's count is scored against its own
simulated distribution (the posterior's 5-95%, or the likelihood-ratio set). The peak is the model's steady-state peak
over kappa, from long runs of the tests' queue (tests/helpers/queue_model.py). ``--fixed``: 19 steps at fixed loads 4%
either side of the true peak instead of the search's placing; ``--design``: the search's step loads over its running
estimate after the bisection. ``--real``: each saved search through the M/G/c queue of its own service times, with kappa
and a load-free stall share.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import scipy.stats

TESTS = Path(__file__).resolve().parent.parent / "tests"
sys.path[:0] = [str(TESTS)]

from helpers.queue_model import PERCENTILE, md_c_latencies, mg_c_latencies  # noqa: E402
from trtbench.core.stats import Interval  # noqa: E402
from trtbench.scenarios.serving.loadgen import peak_estimate as pe  # noqa: E402
from trtbench.scenarios.serving.loadgen import queue_model as qm  # noqa: E402
from trtbench.scenarios.serving.loadgen.queue_model import KAPPAS, QueueModel, late_counts, table_loads  # noqa: E402
from trtbench.scenarios.serving.vision.result import LoadGenRun  # noqa: E402
from peak_estimate_grid import QUEUES, held, true_peak  # noqa: E402

LEVEL = 0.9
LONG, LONG_RUNS, WARM_UP = 1_000_000, 4, 2000  # queries of a steady-state run, the runs averaged, and those left out
BUDGET = 9500  # queries in steps a search (no confirming run)
REAL_REPS = 1000  # a real run's simulated runs per load


def _sizes(queries) -> tuple[int, ...]:
    """The step sizes of ``queries``, each once, in order: the key of :func:`late_counts`."""
    return tuple(sorted({int(n) for n in queries}))


def long_run_shares(model: QueueModel, loads: np.ndarray, gaps: np.ndarray, services: np.ndarray) -> np.ndarray:
    """The late share past the first WARM_UP queries of one long run at each of ``loads`` (the tests' queue: M/D/c by
    its recursion where every service time is one, else M/G/c; ``gaps``, ``services``: one a query)."""
    if len(set(model.services_s)) == 1:
        latencies = [md_c_latencies(qps, model.services_s[0], model.servers, gaps) for qps in loads]
    else:
        latencies = [mg_c_latencies(qps, services, model.servers, gaps) for qps in loads]
    return np.array([float(np.mean(lat[WARM_UP:] > model.bound_s)) for lat in latencies])


def _between(log_loads: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where the log loads ``x`` fall in the table: the index of the table load below each, and the weight of the
    one above (clipped to the table)."""
    pos = np.clip((x - log_loads[0]) / (log_loads[1] - log_loads[0]), 0, len(log_loads) - 1.000001)
    below = np.floor(pos).astype(int)
    return below, pos - below


@lru_cache(maxsize=8)
def steady_peak(model: QueueModel, allowed: float) -> float:
    """The load where the steady-state late share reaches ``allowed``, from LONG_RUNS long runs a load (common draws):
    longer than the package's :func:`~trtbench.scenarios.serving.loadgen.queue_model.steady_peak`, the figures'
    reference."""
    draws = []
    for seed in range(LONG_RUNS):
        rng = np.random.default_rng(3 + seed)
        draws.append((rng.exponential(1.0, LONG), rng.choice(np.asarray(model.services_s), LONG)))
    lo, hi = 0.3 * model.capacity, model.capacity
    for _ in range(4):
        loads = np.linspace(lo, hi, 12)
        share = np.mean([long_run_shares(model, loads, gaps, services) for gaps, services in draws], 0)
        over = np.nonzero(share > allowed)[0]
        first = over[0] if len(over) else len(loads)
        lo, hi = loads[max(first - 1, 0)], loads[min(first, len(loads) - 1)]
    return float((lo + hi) / 2)


def estimate(model: QueueModel, qps: np.ndarray, queries: np.ndarray, late: np.ndarray, allowed: float,
             seed: int = 5) -> Interval:
    """kappa by inverting the test on the total late count; the peak is the model's over kappa."""
    at_size = late_counts(model, _sizes(queries))
    log_loads = np.log(table_loads(model))
    peak_model = steady_peak(model, allowed)
    rng = np.random.default_rng(seed)
    steps = len(qps)
    perm = np.stack([rng.permutation(qm.RUNS) for _ in range(steps)])  # steps x draws
    kappas = KAPPAS
    i0, w = _between(log_loads, np.log(kappas)[:, None] + np.log(qps)[None, :])  # kappa x steps
    total = np.zeros((len(KAPPAS), qm.RUNS))
    for j in range(steps):
        counts = at_size[int(queries[j])][:, perm[j]]  # loads x draws
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
    return Interval(peak_model / kappa, peak_model / kappa_hi, peak_model / kappa_lo, pe.LEVEL)


def likelihood_estimate(model: QueueModel, qps: np.ndarray, queries: np.ndarray, late: np.ndarray,
                        allowed: float) -> Interval:
    """kappa from the steps' binned late counts' likelihood (the package's: each step its own simulated distribution);
    the interval is the posterior's 5-95% under a flat prior in log kappa (or the likelihood-ratio set with
    LIKELIHOOD_RATIO)."""
    peak_model, scale = steady_peak(model, allowed), qm.posterior(model, qps, queries, late)
    if LIKELIHOOD_RATIO:
        loglik = scale.loglik
        best = int(loglik.argmax())
        inside = np.nonzero(loglik >= loglik[best] - 1.3528)[0]
        return Interval(peak_model / KAPPAS[best], peak_model / KAPPAS[inside[-1]], peak_model / KAPPAS[inside[0]],
                        pe.LEVEL)
    return Interval(peak_model / scale.kappa(0.5), peak_model / scale.kappa(0.95), peak_model / scale.kappa(0.05),
                    pe.LEVEL)


DESIGN = (1 - pe.SPREAD, 1 + pe.SPREAD)  # the steps after the bisection, over the running estimate
LIKELIHOOD = False
LIKELIHOOD_RATIO = False
STALL = False


def steps_estimate(model: QueueModel, steps: list) -> Interval:
    """:func:`estimate` over the search's steps."""
    if STALL:
        return stall_estimate(model, steps)
    chosen = likelihood_estimate if LIKELIHOOD else estimate
    return chosen(model, np.array([s.qps for s in steps]), np.array([s.queries for s in steps]),
                    np.array([s.late.sum() for s in steps], float), 1 - PERCENTILE)


def search(model: QueueModel, run, plan: pe.SearchPlan) -> Interval:
    """Bisection until a step is late, then steps 4% either side of the running estimate, until the budget."""
    steps, used, point = [], 0, math.nan
    while True:
        if math.isfinite(point) and point > 0:
            qps = point * DESIGN[len(steps) % len(DESIGN)]
        else:
            qps = (pe._bracket(steps, plan.allowed, plan.capacity) or pe.Bracket(0.0, plan.capacity)).qps
        queries = plan.queries_at(qps)
        if used + queries > BUDGET:
            return steps_estimate(model, steps)
        steps.append(pe.LoadStep(qps, len(steps), np.asarray(run(qps, queries), dtype=bool)))
        used += queries
        point = steps_estimate(model, steps).value if any(s.late.any() for s in steps) else math.nan


def fixed(model: QueueModel, run, peak: float) -> Interval:
    """19 steps of 500 queries alternately 4% above and below the true peak."""
    loads = peak * np.array([0.96 if i % 2 else 1.04 for i in range(19)])
    late = np.array([run(qps, 500).sum() for qps in loads], float)
    return (likelihood_estimate if LIKELIHOOD else estimate)(model, loads, np.full(19, 500), late, 1 - PERCENTILE)


STALL_LO, STALL_HI, STALL_POINTS = 1e-5, 3e-2, 40  # the load-free late share's grid (a query's chance of a stall)
STALL_SPIKE = 0.0  # the prior's weight on the grid's lowest stall share (as good as none); 0: flat in the log
SHARE_LOADS, SHARE_QUERIES = 40, 300_000  # the steady-state late share's curve: loads, queries a load



def _weighted_quantiles(values: np.ndarray, weights: np.ndarray, qs: tuple) -> list[float]:
    order = np.argsort(values, axis=None)
    cdf = np.cumsum(weights.ravel()[order]) / weights.sum()
    return [float(values.ravel()[order][min(int(np.searchsorted(cdf, q)), cdf.size - 1)]) for q in qs]


@dataclass(frozen=True)
class StallPosterior:
    """The posterior (kappa x stall share, unnormalised) over its grids, and the peak at each pair."""

    kappas: np.ndarray
    stalls: np.ndarray
    weights: np.ndarray
    peaks: np.ndarray

    def quantiles(self, values: np.ndarray) -> list[float]:
        return _weighted_quantiles(np.broadcast_to(values, self.weights.shape), self.weights, (0.05, 0.5, 0.95))


@lru_cache(maxsize=8)
def share_curve(model: QueueModel) -> tuple[np.ndarray, np.ndarray]:
    """The model's steady-state late share at SHARE_LOADS loads up to its capacity (monotone), and those loads."""
    rng = np.random.default_rng(2)
    gaps, draws = rng.exponential(1.0, SHARE_QUERIES), rng.choice(np.asarray(model.services_s), SHARE_QUERIES)
    grid = np.linspace(0.3, 1.0, SHARE_LOADS) * model.capacity
    return np.maximum.accumulate(long_run_shares(model, grid, gaps, draws)), grid


def stall_posterior(model: QueueModel, at_size: dict, steps: list[tuple[float, int, int]]):
    """kappa and a load-free stall share from the steps' late counts ((qps, queries, late) each): each count scored
    exactly against the model's simulated counts at its size (``at_size``: loads x runs) plus a binomial of stalls."""
    stalls = np.exp(np.linspace(math.log(STALL_LO), math.log(STALL_HI), STALL_POINTS))
    kappas = KAPPAS
    loglik = np.zeros((len(KAPPAS), STALL_POINTS))
    for qps, n, k in steps:
        runs = at_size[n]
        pmf = np.stack([np.bincount(np.minimum(row, k + 1), minlength=k + 2)[:k + 1] for row in runs]) / runs.shape[1]
        c = np.arange(k + 1)
        stall = scipy.stats.binom.pmf((k - c)[:, None], (n - c)[:, None], stalls[None, :])  # (k+1) x stalls
        at_load = pmf @ stall  # table loads x stalls
        i0, w = _between(np.log(table_loads(model)), np.log(kappas * qps))
        w = w[:, None]
        loglik += np.log(np.maximum((1 - w) * at_load[i0] + w * at_load[i0 + 1], 1e-300))
    prior = np.full(STALL_POINTS, (1 - STALL_SPIKE) / (STALL_POINTS - 1))
    prior[0] = STALL_SPIKE if STALL_SPIKE > 0 else prior[1]
    loglik += np.log(prior)[None, :]
    share, grid = share_curve(model)
    budget = (1 - PERCENTILE) - stalls
    peaks = np.where(budget > share[0], np.interp(budget, share, grid), 0.0)[None, :] / kappas[:, None]
    return StallPosterior(kappas[:, None], stalls[None, :], np.exp(loglik - loglik.max()), peaks)


def stall_estimate(model: QueueModel, steps: list) -> Interval:
    """The grid's search steps through :func:`stall_posterior` (the table's runs as the model's counts)."""
    at_size = late_counts(model, _sizes(s.queries for s in steps))
    post = stall_posterior(model, at_size, [(s.qps, s.queries, int(s.late.sum())) for s in steps])
    low, mid, high = post.quantiles(post.peaks)
    return Interval(mid, low, high, pe.LEVEL)


def real_estimate(path: Path) -> str:
    """A saved sleeper search (serving_peak.py --save) read through the M/G/c queue fed its own service times, with a
    load scale kappa and a load-free stall share: their posterior, and the peak where the late share reaches 1%."""
    data = json.loads(path.read_text())
    servers, bound_s = data["workers"], data["bound_ms"] / 1e3
    runs = data["runs"]
    model = QueueModel(tuple(ms / 1e3 for run in runs for ms in run["service_ms"]), servers, bound_s)
    flags = [(run["offered_qps"], LoadGenRun.from_dict(run).late_flags(data["bound_ms"])) for run in runs]
    steps = [(qps, len(late), sum(late)) for qps, late in flags]
    post = stall_posterior(model, late_counts(model, _sizes(n for _, n, _ in steps), REAL_REPS), steps)
    peak_q, kappa_q, stall_q = post.quantiles(post.peaks), post.quantiles(post.kappas), post.quantiles(post.stalls)
    share, grid = share_curve(model)
    mgc = float(np.interp(1 - PERCENTILE, share, grid))
    est = data["peak_qps"]
    return (f"| {servers} | {data['seed']} | {est:.1f} ({est / mgc:.3f}) | {peak_q[1]:.1f} [{peak_q[0]:.1f}-"
            f"{peak_q[2]:.1f}] ({peak_q[1] / mgc:.3f}) | {kappa_q[1]:.3f} [{kappa_q[0]:.3f}-{kappa_q[2]:.3f}] | "
            f"{100 * stall_q[1]:.3f} [{100 * stall_q[0]:.3f}-{100 * stall_q[2]:.3f}] | {mgc:.1f} | "
            f"{', '.join(f'{q:.0f}:{k}/{n}' for q, n, k in steps)} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--searches", type=int, default=20)
    parser.add_argument("--queues", default="", help="comma-separated indices into QUEUES (default: all)")
    parser.add_argument("--fixed", action="store_true", help="steps at fixed loads around the true peak")
    parser.add_argument("--real", type=Path, nargs="*", default=(),
                        help="saved sleeper searches (serving_peak.py --save) to read through the queue model")
    parser.add_argument("--stall-spike", type=float, default=0.0,
                        help="with --likelihood stall or --real: the prior's weight on no stalls (0: flat in the log)")
    parser.add_argument("--design", default="", help="comma-separated step loads over the estimate")
    parser.add_argument("--likelihood", choices=("", "posterior", "ratio", "stall"), default="",
                        help="stall: the posterior over kappa and a load-free stall share, as --real reads")
    args = parser.parse_args()
    global LIKELIHOOD, LIKELIHOOD_RATIO, DESIGN, STALL
    STALL = args.likelihood == "stall"
    global STALL_SPIKE
    STALL_SPIKE = args.stall_spike
    DESIGN = tuple(float(x) for x in args.design.split(",")) if args.design else DESIGN
    LIKELIHOOD, LIKELIHOOD_RATIO = bool(args.likelihood), args.likelihood == "ratio"
    if args.real:
        print("| workers | seed | package's peak (/ M/G/c) | queue model's peak [90%] (/ M/G/c) | kappa [90%] | "
              "stall % [90%] | M/G/c peak | steps (QPS: late / queries) |")
        print("|---|---|---|---|---|---|---|---|")
        for path in args.real:
            print(real_estimate(path), flush=True)
        return 0
    picked = [int(i) for i in args.queues.split(",")] if args.queues else range(len(QUEUES))
    print("| queue | true peak (model's) | median found / true | covers | width |")
    print("|---|---|---|---|---|")
    for i in picked:
        servers, service_ms, bound_ms = QUEUES[i]
        service_s, bound_s = service_ms / 1e3, bound_ms / 1e3
        started = time.monotonic()
        peak = true_peak(QUEUES[i])
        model = QueueModel((service_s,), servers, bound_s)
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
