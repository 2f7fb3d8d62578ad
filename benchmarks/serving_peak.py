"""Does the serving peak search find the queue's peak? The sleeper model against the M/D/c queue.

Run:  .venv/bin/python benchmarks/serving_peak.py [--repeats 3] [--workers 2 1] [--min-queries 500]
          [--search-minutes 4.5] [--priority -10] [--save DIR]

A toy runtime that sleeps 10.2 ms per call is served under MLPerf LoadGen by 2, then 1 worker(s), with a
p99 bound of 40 ms and the server scenario's default rule, the joint estimate (``validity: estimate``,
trtbench/scenarios/serving/loadgen/peak_estimate.py): every step's late share fitted together, a 90% interval, steps of
``max(min_queries, QPS x 10 s)`` queries within 10,000 queries a search, and a confirming run at the
interval's low end. ``--repeats`` searches per worker count (schedule seeds 0, 1, ...) print each peak with
its interval, queries, minutes, why it stopped and LoadGen's verdict at the low end; then their median
against the M/D/c queue's true peak (the steady-state p99 within the bound:
tests/scenarios/serving/test_serving_peak.py) at two service times:

- *queue*: what a worker is busy per query as the queue sees it, from the dispatcher's ``send_call``
  to its next query (the sleep, the pipe both ways, the dispatcher's bookkeeping and LoadGen's
  ``QuerySamplesComplete``): a pool of the same workers with a backlog of ``SATURATE`` queries per
  worker queued at once completes them in ``workers * elapsed / queries`` each, measured before and
  after the searches (the mean of the two is the reference);
- *call*: the call alone in the worker (the result's ``service_ms``, the median of 5 calls).

Each search's peak is also set against the M/G/c queue fed that search's own service times (each answered query's
call in its worker, as the run recorded it), with the same Poisson arrivals (``mg_c_true_peak`` in
tests/helpers/queue_model.py): what the queue the run really was allows, its tail included (a stall of 30 ms makes
a query late at a 40 ms bound, which the M/D/c queue at the median never sees).

The target is 0.95 to 1.05 of the M/G/c queue's, and a search at 1 worker (about 44 QPS) within 5 minutes. Each
line gives the load average before and after: a busy CPU delays the dispatcher and the workers, which a
sleep does not show. ``--priority -10`` runs the benchmark and its workers at that nice value.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
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

from helpers.queue_model import md_c_true_peak, mg_c_true_peak  # noqa: E402  (the tests' queue model)
from helpers.serving import BOUND_MS, CALL_S, serve_sleeper  # noqa: E402  (the tests' sleeper)
from toy_runtimes import SleepsPerCall  # noqa: E402
from trtbench.scenarios.serving.vision.config import ServingConfig  # noqa: E402
from trtbench.scenarios.serving.vision.pool import ServerSession, ServingPool  # noqa: E402
from trtbench.scenarios.serving.loadgen import run_loadgen  # noqa: E402
from trtbench.scenarios.serving.vision.run import OfferedLoad, server_load  # noqa: E402
from trtbench.scenarios.serving.loadgen.rule import late_count  # noqa: E402

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


class AnswersAtOnce:
    """A LoadGen session that completes each query as it is issued, keeping when each was issued (ns)."""

    def __init__(self, lg):
        self.lg, self.stamps = lg, []

    def issue(self, samples) -> None:
        self.stamps.append(time.perf_counter_ns())
        self.lg.QuerySamplesComplete([self.lg.QuerySampleResponse(sample.id, 0, 0) for sample in samples])

    def flush(self) -> None:
        """Nothing is held back."""

    def close(self) -> None:
        """Nothing runs beside LoadGen."""


def check_loadgen_gaps(settings: ServingConfig, qps: float = 400.0, queries: int = 1500) -> float:
    """The correlation of a LoadGen run's issue gaps (an SUT that answers at once) with
    :func:`loadgen_unit_gaps` for its seed: near 1 when they are LoadGen's (the issue thread's jitter aside)."""
    fast = dataclasses.replace(settings, find_peak=False, target_qps=qps, min_queries=queries, min_duration_s=1.0)
    with tempfile.TemporaryDirectory() as tmp:
        session, _ = run_loadgen(AnswersAtOnce, 1, server_load(fast, OfferedLoad(qps, 0)), Path(tmp))
    gaps = np.diff(np.array(session.stamps)) / 1e9 * qps
    return float(np.corrcoef(gaps, loadgen_unit_gaps(settings.seed, len(gaps)))[0, 1])


def load_average() -> str:
    """The 1-minute load average (the machine's runnable threads; 2 cores here)."""
    return Path("/proc/loadavg").read_text().split()[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, nargs="+", default=[2, 1])
    parser.add_argument("--min-queries", type=int, default=500)
    parser.add_argument("--priority", type=int, default=None, help="nice value to run at (default: unchanged)")
    parser.add_argument("--search-minutes", type=float, default=None, help="search_minutes (default: no limit)")
    parser.add_argument("--save", type=Path, default=None,
                        help="a folder to write each search's runs to (w<workers>_s<seed>.json), for "
                             "benchmarks/peak_queue_model.py --real")
    args = parser.parse_args()
    if args.priority is not None:
        os.setpriority(os.PRIO_PROCESS, 0, args.priority)
    settings = ServingConfig(p99_ms=BOUND_MS, find_peak=True, threads=1, min_queries=args.min_queries,
                             search_minutes=args.search_minutes)
    bound_s = BOUND_MS / 1e3
    print(f"rule {settings.peak_rule}, steps of max({settings.queries}, QPS x {settings.min_duration_s:g} s) queries, "
          f"{settings.search_queries} queries a search, nice {os.getpriority(os.PRIO_PROCESS, 0)}", flush=True)
    print(f"LoadGen's arrival gaps against loadgen_unit_gaps: correlation {check_loadgen_gaps(settings):.3f}")
    for workers in args.workers:
        before, load_before = queue_service_ms(workers), load_average()
        peaks, calls, real = [], [], []
        for repeat in range(args.repeats):
            started = time.monotonic()
            with tempfile.TemporaryDirectory() as tmp:
                alone = dataclasses.replace(settings, workers=[workers], seed=repeat)
                (result,) = serve_sleeper(Path(tmp), alone, lambda text: print(text, file=sys.stderr, flush=True))
            minutes, interval = (time.monotonic() - started) / 60, result.interval
            peaks.append(result.peak_qps)
            calls.append(result.service_ms)
            print(f"  w{workers} seed {repeat}: {interval.text()}; {len(result.runs)} runs, "
                  f"{minutes:.1f} min with the service time; "
                  f"{result.status}{': ' + result.reason if result.reason else ''}",
                  flush=True)
            if args.save:
                args.save.mkdir(parents=True, exist_ok=True)
                (args.save / f"w{workers}_s{repeat}.json").write_text(json.dumps(
                    {"workers": workers, "seed": repeat, "bound_ms": BOUND_MS, "peak_qps": result.peak_qps,
                     "interval": interval.to_dict() if interval else None,
                     "runs": [run.to_dict() for run in result.runs]}))
            tail = result.service_tail_ms
            if tail is None:  # no query answered: nothing to feed the queue
                continue
            services = np.array([ms for run in result.runs for ms in run.service_ms]) / 1e3
            real.append((result.peak_qps, mg_c_true_peak(services, workers, bound_s)))
            ideal = md_c_true_peak(tail[0] / 1e3, workers, bound_s)
            print(f"       service at the queue p50 / p99 / max {tail[0]:.2f} / {tail[1]:.2f} / {tail[2]:.1f} ms: "
                  f"M/G/c {real[-1][1]:.1f} (ratio {result.peak_qps / real[-1][1]:.3f}); M/D/c at its median "
                  f"{ideal:.1f} (ratio {result.peak_qps / ideal:.3f})", flush=True)
            print("       runs (QPS offered, late / queries): " + ", ".join(
                f"{run.offered_qps:.1f}{' confirm' if run.confirm else ''} ({late_count(run.latencies_ms, BOUND_MS)}/"
                f"{len(run.latencies_ms)})" for run in result.runs), flush=True)
        queue_ms = statistics.mean([before, queue_service_ms(workers)])
        at_queue = md_c_true_peak(queue_ms / 1e3, workers, bound_s)
        at_call = md_c_true_peak(statistics.median(calls) / 1e3, workers, bound_s)
        median = statistics.median(peaks)
        ratio = statistics.median(p / q for p, q in real) if real else math.nan
        print(f"w{workers}: peaks {', '.join(f'{p:.1f}' for p in peaks)}, median {median:.1f}; M/G/c of their own "
              f"service times {', '.join(f'{q:.1f}' for _, q in real)} (median ratio {ratio:.3f}); queue "
              f"{queue_ms:.2f} ms "
              f"(before {before:.2f}): M/D/c {at_queue:.1f} (ratio {median / at_queue:.3f}); call "
              f"{statistics.median(calls):.2f} ms: M/D/c {at_call:.1f} (ratio {median / at_call:.3f}); load "
              f"{load_before}-{load_average()}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
