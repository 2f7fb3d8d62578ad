"""The history's step detection (trtbench/analysis/change_points.py, the code `trtbench history` and `gate` run)
simulated with this machine's figures: each run's own interval and the drift between runs, measured from a history
of repeated runs of one config (benchmarks/history_step.py's runs 1-4, or any nightly history), or given.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/step_detection.py [HISTORY] [--drift D] [--half-width H] [--series N]

Prints the measured (or given) drift and interval, then, over N series each (default 2000, seed 43): how often a
10% step is found within two runs (8 runs before it), and how often a stationary 10-run series raises an alarm;
the done-means are >= 90% and <= 2%.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import statistics

import numpy as np

from trtbench.core.stats import Interval
from trtbench.analysis.change_points import find_steps, run_scatter

SEED = 43


def measured(history: str) -> tuple[float, float]:
    """The median over the history's median series of their run-to-run scatter (log sd) and of their points'
    relative interval half-widths, each series up to its first step (accepted or not)."""
    from trtbench import api

    drifts, widths = [], []
    for series in api.history_series(history, api.HistoryQuery(figure="median")):
        points = [p.value for p in series.points if p.value is not None]
        # the steps over every run (an accepted step no longer shows in the series' own steps)
        steps = find_steps(points)
        if steps:
            points = points[:steps[0].index]
        if len(points) >= 3:
            drifts.append(run_scatter([points]))
            widths += [(p.high - p.low) / 2 / p.value for p in points]
    if not drifts:
        raise SystemExit(f"{history}: no median series of 3 runs or more")
    return statistics.median(drifts), statistics.median(widths)


def series(rng, n: int, drift: float, half_width: float, step_at: int | None) -> list[Interval]:
    points = []
    for i in range(n):
        level = 10.0 * (1.10 if step_at is not None and i >= step_at else 1.0)
        value = level * math.exp(drift * rng.standard_normal())
        half = half_width * math.exp(0.3 * rng.standard_normal())
        points.append(Interval(value, value * (1 - half), value * (1 + half)))
    return points


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("history", nargs="?")
    parser.add_argument("--drift", type=float)
    parser.add_argument("--half-width", type=float)
    parser.add_argument("--series", type=int, default=2000)
    args = parser.parse_args()
    drift, half_width = measured(args.history) if args.history else (0.02, 0.01)
    drift, half_width = args.drift or drift, args.half_width or half_width
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs; drift {drift:.2%} (log sd), "
          f"interval half-width {half_width:.2%}, {args.series} series each, seed {SEED}")
    rng = np.random.default_rng(SEED)
    alarms = sum(bool(find_steps(series(rng, 10, drift, half_width, None))) for _ in range(args.series))
    found = sum(any(s.index == 8 for s in find_steps(series(rng, 10, drift, half_width, 8)))
                for _ in range(args.series))
    print(f"10% step found within two runs: {found / args.series:.1%} (>= 90%)")
    print(f"stationary 10-run series with an alarm: {alarms / args.series:.1%} (<= 2%)")


if __name__ == "__main__":
    main()
