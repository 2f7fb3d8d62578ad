"""What the two-level intervals and the regime detector cost a report, on synthetic blocks of typical and large
points (no model is run): per row, the median's interval and a speedup's; per point, its regimes.

    python benchmarks/interval_cost.py

Prints the median time of each over 5 calls, in ms, for 10 to 1200 rounds x 3 processes. The report makes, per
timed row, one median interval and one or two speedup intervals (four more where its point spans regimes), and
per point one regime search.
"""

from __future__ import annotations

import os
import platform
import statistics
import time

import numpy as np

from trtbench.analysis.regimes import find_regimes
from trtbench.core.stats import BlockSeries, median_interval, speedup_interval


def series(ms: float, rounds: int, processes: int, rng) -> BlockSeries:
    n = rounds * processes
    return BlockSeries(tuple(ms * np.exp(0.01 * rng.standard_normal(n))),
                       tuple(np.repeat(np.arange(processes), rounds).tolist()),
                       tuple(np.tile(np.arange(rounds), processes).tolist()))


def timed_ms(call, repeats: int = 5) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def main() -> None:
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}")
    print("| rounds x processes | median interval ms | speedup interval ms | regimes of 8 variants ms |")
    print("|---|---|---|---|")
    rng = np.random.default_rng(0)
    for rounds in (10, 40, 200, 1200):
        base, this = series(10.0, rounds, 3, rng), series(5.0, rounds, 3, rng)
        point = [series(10.0 / (1 + v / 10), rounds, 3, rng) for v in range(8)]
        print(f"| {rounds} x 3 | {timed_ms(lambda: median_interval(base, 0.001)):.1f} | "
              f"{timed_ms(lambda: speedup_interval(base, this, 0.001)):.1f} | "
              f"{timed_ms(lambda: find_regimes(point), repeats=3):.0f} |")


if __name__ == "__main__":
    main()
