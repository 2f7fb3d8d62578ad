"""Does the serving peak search find the queue's peak? The sleeper model against the M/D/c queue.

Run:  .venv/bin/python benchmarks/serving_peak.py [--repeats 3] [--trials 1] [--workers 2 1]

A toy runtime that sleeps 10.2 ms per call is served under MLPerf LoadGen by 2, then 1 worker(s), with a
p99 bound of 40 ms and the server scenario's defaults: a step passes when the upper bound at 0.9
confidence on its share of late queries is within 1%, 7227 queries a step, bisection until the peak
is bracketed within 2% (trtbench/scenarios/serving_rule.py, serving_search.py). Each trial runs the
peak search ``--repeats`` times per worker count and prints each peak, their median, and the M/D/c
queue's true peak (the steady-state p99 within the bound: tests/test_serving_peak.py) at two service
times with the median's ratio to each:

- *queue*: what a worker is busy per query as the queue sees it, from the dispatcher's ``send_call``
  to its next query (the sleep, the pipe both ways, the dispatcher's bookkeeping and LoadGen's
  ``QuerySamplesComplete``): a pool of the same workers with a backlog of ``SATURATE`` queries per
  worker queued at once completes them in ``workers * elapsed / queries`` each, measured before and
  after the searches (the mean of the two is the reference);
- *call*: the call alone in the worker (the result's ``service_ms``, the median of 5 calls), which
  leaves the round trip out (the reference before 2026-11-25 10:00).

The target is 0.95 to 1.02 of the queue's. A search's peak also depends on its arrivals: LoadGen's
schedule for seed ``s`` is the same unit exponential gaps, scaled by 1 / QPS, at every step (a repeat's
steps share them) and in every process. The *same arrivals* column runs the search on the simulated
M/D/c queue at the queue's service time fed those gaps (reproduced as LoadGen draws them: ``std::mt19937``
seeded with the seed, libstdc++'s ``exponential_distribution``; :func:`loadgen_unit_gaps`, checked
against a LoadGen run at the start): what a perfect SUT would find with these seeds, so the ratio of a
real peak to it is the SUT's own shortfall. Trial ``t`` uses the seeds ``t * repeats`` onwards. A step of 7227 queries takes about 2.7 minutes at 1 worker
and 55 s at 2: a search takes about 20 and 7 minutes. Each line gives the load average before and
after: a busy CPU delays the dispatcher and the workers, which a sleep does not show. ``--priority -10``
runs the benchmark and its workers (which inherit it) at that nice value (lowering it needs the
privilege to), so that other work on a shared machine stalls them less, as a server alone on its
machine would not be stalled.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

TESTS = Path(__file__).resolve().parent.parent / "tests"
sys.path[:0] = [str(TESTS), str(TESTS / "assets")]

from test_serving import BOUND_MS, CALL_S, serve_sleeper  # noqa: E402  (the tests' sleeper)
from test_serving_peak import md_c_latencies, md_c_true_peak  # noqa: E402  (the tests' queue model)
from toy_runtimes import SleepsPerCall  # noqa: E402
from trtbench.scenarios.serving_config import ServingConfig  # noqa: E402
from trtbench.scenarios.serving_pool import ServerSession, ServingPool  # noqa: E402
from trtbench.scenarios.serving import OfferedLoad, _log_settings, _test_settings  # noqa: E402
from trtbench.scenarios.serving_rule import late_count, passes  # noqa: E402
from trtbench.scenarios.serving_search import Bracket  # noqa: E402

SATURATE = 600  # queries per worker in the backlog that measures the queue's service time (about 6.5 s)


def queue_service_ms(workers: int) -> float:
    """The ms a worker is busy per query in the serving scenario's SUT (:class:`ServerSession` over a
    :class:`ServingPool` of sleepers), from a backlog of ``SATURATE`` queries per worker issued at once."""
    queries, done, completed = SATURATE * workers, threading.Event(), [0]

    def complete(ids: list[int]) -> None:
        completed[0] += len(ids)
        if completed[0] >= queries:
            done.set()
    pool = ServingPool([SleepsPerCall(CALL_S)] * workers, timeout_s=120.0, threads=1)
    try:
        session = ServerSession(pool, workers, complete, timeout_s=30.0)
        started = time.perf_counter()
        session.issue([SimpleNamespace(id=i) for i in range(queries)])
        done.wait()
        elapsed = time.perf_counter() - started
        session.close()
    finally:
        pool.close()
    return workers * elapsed / queries * 1e3


def loadgen_unit_gaps(seed: int, queries: int) -> np.ndarray:
    """The gaps between LoadGen's Server arrivals for ``schedule_rng_seed`` ``seed``, times the QPS: its
    ``std::mt19937(seed)`` (numpy's legacy seeding is the same ``init_genrand``) drawn through libstdc++'s
    ``exponential_distribution``, ``-log(1 - u)`` with ``u`` from two 32-bit draws (``generate_canonical``)."""
    generator = np.random.MT19937()
    generator._legacy_seeding(seed)
    low, high = generator.random_raw(2 * queries).astype(np.float64).reshape(queries, 2).T
    return -np.log1p(-(low + high * 2.0 ** 32) / 2.0 ** 64)


def check_loadgen_gaps(settings: ServingConfig, qps: float = 400.0, queries: int = 1500) -> float:
    """The correlation of a LoadGen run's issue gaps (an SUT that answers at once) with
    :func:`loadgen_unit_gaps` for its seed: near 1 when they are LoadGen's (the issue thread's jitter aside)."""
    lg = importlib.import_module("mlperf_loadgen")
    stamps: list[int] = []

    def issue(samples) -> None:
        stamps.append(time.perf_counter_ns())
        lg.QuerySamplesComplete([lg.QuerySampleResponse(sample.id, 0, 0) for sample in samples])
    sut, qsl = lg.ConstructSUT(issue, lambda: None), lg.ConstructQSL(1, 1, lambda i: None, lambda i: None)
    fast = dataclasses.replace(settings, find_peak=False, target_qps=qps, min_queries=queries, min_duration_s=1.0)
    with tempfile.TemporaryDirectory() as tmp:
        try:
            lg.StartTestWithLogSettings(sut, qsl, _test_settings(lg, fast, OfferedLoad(qps, 0)),
                                        _log_settings(lg, Path(tmp)))
        finally:
            lg.DestroyQSL(qsl)
            lg.DestroySUT(sut)
    gaps = np.diff(np.array(stamps)) / 1e9 * qps
    return float(np.corrcoef(gaps, loadgen_unit_gaps(settings.seed, len(gaps)))[0, 1])


def same_arrivals_peak(settings: ServingConfig, repeat: int, service_ms: float, workers: int,
                       capacity: float) -> float:
    """The peak the search finds on the M/D/c queue at ``service_ms`` fed the arrivals LoadGen gives
    ``repeat`` (its seed), from the same bracket [0, ``capacity``]."""
    gaps = loadgen_unit_gaps(settings.seed + repeat, settings.queries)
    bracket = Bracket(0.0, capacity)
    while not bracket.done(settings.resolution, settings.search_steps):
        late = late_count(md_c_latencies(bracket.qps, service_ms / 1e3, workers, gaps), BOUND_MS / 1e3)
        bracket = bracket.after(passes(late, settings.queries, settings.percentile, settings.confidence))
    return bracket.lo


def load_average() -> str:
    """The 1-minute load average (the machine's runnable threads; 2 cores here)."""
    return Path("/proc/loadavg").read_text().split()[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--trials", type=int, default=1)
    parser.add_argument("--workers", type=int, nargs="+", default=[2, 1])
    parser.add_argument("--priority", type=int, default=None, help="nice value to run at (default: unchanged)")
    args = parser.parse_args()
    if args.priority is not None:
        os.setpriority(os.PRIO_PROCESS, 0, args.priority)
    settings = ServingConfig(p99_ms=BOUND_MS, find_peak=True, threads=1, repeats=args.repeats)
    bound_s = BOUND_MS / 1e3
    print(f"rule {settings.peak_rule}, {settings.queries} queries a step, resolution {settings.resolution:g}, "
          f"nice {os.getpriority(os.PRIO_PROCESS, 0)}", flush=True)
    print(f"LoadGen's arrival gaps against loadgen_unit_gaps: correlation {check_loadgen_gaps(settings):.3f}")
    print("trial  workers  queue ms  call ms  peaks (QPS)             median  M/D/c queue (ratio)  "
          "M/D/c call (ratio)  same arrivals (ratio)  steps  minutes  load")
    for trial, workers in ((trial, workers) for trial in range(args.trials) for workers in args.workers):
        before, load_before, started = queue_service_ms(workers), load_average(), time.monotonic()
        with tempfile.TemporaryDirectory() as tmp:
            alone = dataclasses.replace(settings, workers=[workers], seed=trial * args.repeats)
            (result,) = serve_sleeper(Path(tmp), alone, lambda text: print(text, file=sys.stderr, flush=True))
        minutes, load_after = (time.monotonic() - started) / 60, load_average()
        queue_ms = statistics.mean([before, queue_service_ms(workers)])
        at_queue = md_c_true_peak(queue_ms / 1e3, workers, bound_s)
        at_call = md_c_true_peak(result.service_ms / 1e3, workers, bound_s)
        capacity = 2 * result.runs[0].offered_qps  # the search's first step is the middle of [0, capacity]
        ideal = [same_arrivals_peak(alone, repeat, queue_ms, workers, capacity) for repeat in range(args.repeats)]
        peaks = ", ".join(f"{p:.1f}" for p in result.peaks)
        print(f"{trial:>5}  {workers:>7}  {queue_ms:>8.2f}  {result.service_ms:>7.2f}  {peaks:<22} "
              f"{result.peak_qps:>6.1f}  {at_queue:>6.1f} ({result.peak_qps / at_queue:.3f})  "
              f"{at_call:>6.1f} ({result.peak_qps / at_call:.3f})  "
              f"{statistics.median(ideal):>6.1f} ({result.peak_qps / statistics.median(ideal):.3f})  "
              f"{len(result.runs):>5}  {minutes:>7.1f}  "
              f"{load_before}-{load_after}" + (f"  {result.status}: {result.reason}" if result.reason else ""),
              flush=True)
        print(f"       queue ms before / after: {before:.2f} / {2 * queue_ms - before:.2f}; same arrivals' peaks: "
              + ", ".join(f"{p:.1f} ({p / at_queue:.3f})" for p in ideal), flush=True)
        print("       runs (QPS offered, + passed, late / queries, LoadGen's p99 ms): " + ", ".join(
            f"{run.offered_qps:.1f}{'+' if run.within_bound else '-'} ({late_count(run.latencies_ms, BOUND_MS)}/"
            f"{len(run.latencies_ms)}, {run.summary.latency_ms.get('p99', float('nan')):.1f})"
            for run in result.runs), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
