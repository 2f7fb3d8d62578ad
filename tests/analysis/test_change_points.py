"""Steps in a series of runs (trtbench/analysis/change_points.py), the history's and the gate's detection code: a
simulation over 1000 series each (seed 43), and what the noise model weighs."""

from __future__ import annotations

import math

import numpy as np

from trtbench.analysis.change_points import against, find_steps
from trtbench.core.stats import Interval

SEED = 43
DRIFT = 0.02  # run-to-run drift (log sd) of a run's median on a quiet machine
HALF_WIDTH = 0.01  # a run's own 95% interval, relative half-width


def series(rng: np.random.Generator, n: int, step_at: int | None = None, size: float = 0.10) -> list[Interval]:
    points = []
    for i in range(n):
        level = 10.0 * (1 + size if step_at is not None and i >= step_at else 1.0)
        value = level * np.exp(DRIFT * rng.standard_normal())
        half = HALF_WIDTH * np.exp(0.3 * rng.standard_normal())
        points.append(Interval(float(value), float(value * (1 - half)), float(value * (1 + half))))
    return points


def test_simulation_a_10_percent_step_is_found_within_two_runs_and_stationary_series_stay_quiet():
    rng = np.random.default_rng(SEED)
    false_alarms = sum(bool(find_steps(series(rng, 10))) for _ in range(1000))
    found = sum(any(s.index == 8 for s in find_steps(series(rng, 10, step_at=8))) for _ in range(1000))
    assert false_alarms <= 20, f"{false_alarms} of 1000 stationary 10-run series raised an alarm"
    assert found >= 900, f"a 10% step two runs before the end was found in {found} of 1000 series"


def test_one_slow_run_is_no_step_but_the_gate_sees_it():
    points = [Interval(10.0, 9.95, 10.05)] * 6 + [Interval(11.5, 11.45, 11.55)]
    assert find_steps(points) == []  # a step at the very end needs two runs after it
    seen = against(points[:-1], points[-1])
    assert seen is not None and 0.14 < seen.change < 0.16 and abs(seen.before.value - 10.0) < 1e-9


def test_a_change_below_the_threshold_is_no_step_however_sure():
    points = [Interval(10.0, 9.99, 10.01)] * 5 + [Interval(10.3, 10.29, 10.31)] * 5
    assert find_steps(points) == [] and find_steps(points, threshold=0.02)[0].index == 5


def test_the_series_scatter_keeps_a_noisy_series_quiet():
    """Tight per-run intervals but runs that wander by 8%: the scatter between runs, which the runs' own intervals
    leave out, is what a step must exceed."""
    rng = np.random.default_rng(SEED)
    values = 10.0 * np.exp(0.08 * rng.standard_normal(12))
    points = [Interval(float(v), float(v * 0.995), float(v * 1.005)) for v in values]
    assert find_steps(points) == []
    assert against(points[:-1], Interval(10.9, 10.85, 10.95)) is None


def test_a_series_whose_levels_cannot_be_compared_has_no_step_and_ends():
    """Infinite values (every output overflowed) make every split's distance undefined: no step, no endless split."""
    assert find_steps([Interval(math.inf, math.inf, math.inf)] * 6) == []
