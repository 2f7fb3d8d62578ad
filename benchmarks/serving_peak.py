"""Does the serving peak search find the queue's peak? The sleeper model against the M/D/c queue.

Run:  .venv/bin/python benchmarks/serving_peak.py [--repeats 3] [--trials 3]

A toy runtime that sleeps 10.2 ms per call is served under MLPerf LoadGen by 1 and 2 workers, with a
p99 bound of 40 ms; each trial runs the peak search ``--repeats`` times per worker count. It prints
each peak (the median of the repeats) against the M/D/c queue's peak for the measured service time
and runs of the search's length (the simulation of tests/test_serving.py), and their ratio. Run it
alone on the machine: a busy CPU delays the dispatcher and the workers, which a sleep does not show.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent / "tests"
sys.path[:0] = [str(TESTS), str(TESTS / "assets")]

from test_serving import BOUND_MS, DURATION_S, md_c_peak, serve_sleeper  # noqa: E402  (the tests' queue model)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--trials", type=int, default=3)
    args = parser.parse_args()
    print("trial  workers  service ms  peaks (QPS)              median  M/D/c  ratio")
    for trial in range(args.trials):
        with tempfile.TemporaryDirectory() as tmp:
            for result in serve_sleeper(Path(tmp), args.repeats):
                expected = md_c_peak(result.service_ms / 1e3, result.workers, BOUND_MS / 1e3, duration_s=DURATION_S,
                                     runs=200)
                peaks = ", ".join(f"{p:.1f}" for p in result.peaks)
                print(f"{trial:>5}  {result.workers:>7}  {result.service_ms:>10.2f}  {peaks:<24} "
                      f"{result.peak_qps:>6.1f}  {expected:>5.1f}  {result.peak_qps / expected:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
