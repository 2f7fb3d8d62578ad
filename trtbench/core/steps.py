"""Steps in a series of runs' figures: change points weighed by each point's own interval and the series' scatter
(why: docs/comparing.md, "Steps, weighed honestly")."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from trtbench.core.stats import Interval

Z_STEP = 4.0  # standard errors between two segments' levels (benchmarks/NOTES.md: the simulation)
Z_POINT = 4.0  # standard errors between the newest point and its baseline segment
MIN_SIDE = 2
THRESHOLD = 0.05
Z95 = 1.959964


@dataclass(frozen=True)
class Step:
    """A change of level at point ``index``: each side's level with its interval, the relative change and its z."""

    index: int
    before: Interval
    after: Interval
    change: float
    z: float


def point_variance(point: Interval) -> float:
    """A point's own variance on the log scale, from its 95% interval (0 without one)."""
    if not (point.low > 0 and point.high > 0) or point.high <= point.low:
        return 0.0
    return ((math.log(point.high) - math.log(point.low)) / (2 * Z95)) ** 2


def run_scatter(segments: Sequence[Sequence[Interval]]) -> float:
    """The run-to-run scatter (log scale) beyond the points' own intervals, pooled over ``segments``."""
    points = [p for segment in segments for p in segment]
    free = len(points) - len(segments)
    if free < 1:
        return 0.0
    squares = sum(float(np.sum((logs - logs.mean()) ** 2))
                  for logs in (np.log([p.value for p in segment]) for segment in segments if segment))
    own = float(np.median([point_variance(p) for p in points]))
    return math.sqrt(max(0.0, squares / free - own))


def level(points: Sequence[Interval], scatter: float) -> tuple[float, float]:
    """The weighted mean of the points' logs and its variance, each point weighed by 1 / (own + scatter^2)."""
    weights = np.array([1.0 / max(point_variance(p) + scatter ** 2, 1e-12) for p in points])
    logs = np.log([p.value for p in points])
    return float(np.sum(weights * logs) / np.sum(weights)), float(1.0 / np.sum(weights))


def level_interval(points: Sequence[Interval], scatter: float) -> Interval:
    """The points' level with its 95% interval."""
    mean, variance = level(points, scatter)
    half = Z95 * math.sqrt(variance)
    return Interval(math.exp(mean), math.exp(mean - half), math.exp(mean + half))


def difference(before: Sequence[Interval], after: Sequence[Interval], scatter: float) -> tuple[float, float]:
    """The relative change from ``before``'s level to ``after``'s and how many standard errors it is."""
    (m_a, v_a), (m_b, v_b) = level(before, scatter), level(after, scatter)
    return math.exp(m_b - m_a) - 1.0, abs(m_b - m_a) / math.sqrt(v_a + v_b)


def _best_split(points: Sequence[Interval], scatter: Optional[float]) -> tuple[int, float]:
    """The split whose sides differ most in standard errors, and that many."""
    logs = np.log([p.value for p in points])
    if not np.all(np.isfinite(logs)):
        return 0, -1.0
    own = np.array([point_variance(p) for p in points])
    median_own = float(np.median(own))
    best = (0, -1.0)
    for i in range(MIN_SIDE, len(points) - MIN_SIDE + 1):
        before, after = logs[:i], logs[i:]
        if scatter is None:
            squares = float(np.sum((before - before.mean()) ** 2) + np.sum((after - after.mean()) ** 2))
            variance = max(0.0, squares / (len(logs) - 2) - median_own)
        else:
            variance = scatter ** 2
        weights = 1.0 / np.maximum(own + variance, 1e-12)
        w_a, w_b = weights[:i], weights[i:]
        gap = abs(float(np.dot(w_b, after) / w_b.sum() - np.dot(w_a, before) / w_a.sum()))
        z = gap / math.sqrt(1.0 / w_a.sum() + 1.0 / w_b.sum())
        if z > best[1]:
            best = (i, z)
    return best


def _split(points: Sequence[Interval], offset: int, scatter: Optional[float], threshold: float) -> list[Step]:
    if len(points) < 2 * MIN_SIDE:
        return []
    cut, best = _best_split(points, scatter)
    if cut == 0 or not math.isfinite(best):
        return []
    before, after = points[:cut], points[cut:]
    used = run_scatter([before, after]) if scatter is None else scatter
    change, z = difference(before, after, used)
    if not z >= Z_STEP or abs(change) < threshold:
        return []
    step = Step(offset + cut, level_interval(before, used), level_interval(after, used), change, z)
    return [*_split(before, offset, scatter, threshold), step, *_split(after, step.index, scatter, threshold)]


def find_steps(points: Sequence[Interval], threshold: float = THRESHOLD,
               scatter: Optional[float] = None) -> list[Step]:
    """The steps of a series in order; ``scatter``: the run-to-run scatter (default: estimated)."""
    return _split(list(points), 0, scatter, threshold)


def against(baseline: Sequence[Interval], point: Interval, threshold: float = THRESHOLD,
            scatter: Optional[float] = None) -> Optional[Step]:
    """``point`` against its baseline's level: a step where it differs beyond noise and ``threshold``, else None."""
    if not baseline:
        return None
    scatter = run_scatter([baseline]) if scatter is None else scatter
    change, z = difference(baseline, [point], scatter)
    if z < Z_POINT or abs(change) < threshold:
        return None
    return Step(len(baseline), level_interval(baseline, scatter), level_interval([point], scatter), change, z)
