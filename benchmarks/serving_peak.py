"""Does the serving peak search find the queue's peak? The sleeper model against the M/D/c queue.

Run:  .venv/bin/python benchmarks/serving_peak.py [--repeats 3] [--trials 1]

A toy runtime that sleeps 10.2 ms per call is served under MLPerf LoadGen by 2, then 1 worker(s), with a
p99 bound of 40 ms and the server scenario's defaults: a step passes when the upper bound at 0.9
confidence on its share of late queries is within 1%, 7227 queries a step, bisection until the peak
is bracketed within 2% (trtbench/scenarios/serving_rule.py, serving_search.py). Each trial runs the
peak search ``--repeats`` times per worker count. It prints each peak (the median of the repeats)
against the M/D/c queue's true peak for the measured service time (the steady-state p99 within the
bound: tests/test_serving_peak.py) and their ratio; the target is 0.95 to 1.02. A step of 7227 queries
takes about 2.7 minutes at 1 worker and 55 s at 2: a search takes about 20 and 7 minutes. Run it alone
on the machine: a busy CPU delays the dispatcher and the workers, which a sleep does not show.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent / "tests"
sys.path[:0] = [str(TESTS), str(TESTS / "assets")]

from test_serving import BOUND_MS, serve_sleeper  # noqa: E402  (the tests' sleeper)
from test_serving_peak import md_c_true_peak  # noqa: E402  (the tests' queue model)
from trtbench.scenarios.serving_config import ServingConfig  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--trials", type=int, default=1)
    args = parser.parse_args()
    settings = ServingConfig(p99_ms=BOUND_MS, find_peak=True, threads=1, repeats=args.repeats)
    print(f"rule {settings.peak_rule}, {settings.queries} queries a step, resolution {settings.resolution:g}")
    print("trial  workers  service ms  peaks (QPS)              median  M/D/c  ratio  steps")
    for trial, workers in ((trial, workers) for trial in range(args.trials) for workers in (2, 1)):
        with tempfile.TemporaryDirectory() as tmp:
            alone = dataclasses.replace(settings, workers=[workers])
            for result in serve_sleeper(Path(tmp), alone, lambda text: print(text, file=sys.stderr, flush=True)):
                expected = md_c_true_peak(result.service_ms / 1e3, result.workers, BOUND_MS / 1e3)
                peaks = ", ".join(f"{p:.1f}" for p in result.peaks)
                print(f"{trial:>5}  {result.workers:>7}  {result.service_ms:>10.2f}  {peaks:<24} "
                      f"{result.peak_qps:>6.1f}  {expected:>5.1f}  {result.peak_qps / expected:.3f}  "
                      f"{len(result.runs)}" + (f"  {result.status}: {result.reason}" if result.reason else ""),
                      flush=True)
                print("       runs (QPS offered, + passed): " + ", ".join(
                    f"{run.offered_qps:.1f}{'+' if run.within_bound else '-'}" for run in result.runs), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
