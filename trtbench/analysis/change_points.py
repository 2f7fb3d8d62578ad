"""Change points: a point's regimes (PELT) and a series' steps (binary segmentation; docs/comparing.md)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from statistics import NormalDist
from typing import Iterator, Optional, Sequence

import numpy as np

from trtbench.core.stats import Interval

MIN_REGIME_ROUNDS = 3
MIN_SHIFT = 0.02  # regimes closer than 2% in speed are one
PENALTY = 3.0  # a stationary series with heavy-tailed noise (Student t, 3 degrees of freedom) stays one regime
MAX_POINTS = 60

Z_STEP = 4.0  # standard errors between two segments' levels (benchmarks/NOTES.md: the simulation)
Z_POINT = 4.0  # standard errors between the newest point and its baseline segment
MIN_SIDE = 2
THRESHOLD = 0.05
Z95 = NormalDist().inv_cdf(0.975)


def _noise(values: np.ndarray) -> float:
    """The series' noise (standard deviation) from its successive differences: robust to a few level shifts."""
    from scipy.stats import median_abs_deviation

    steps = np.diff(values)
    return float(median_abs_deviation(steps, scale="normal") / math.sqrt(2)) if steps.size else 0.0


def _may_split(values: np.ndarray) -> bool:
    """Whether ``values`` can hold two regimes of MIN_REGIME_ROUNDS rounds MIN_SHIFT apart at all."""
    if values.size < 2 * MIN_REGIME_ROUNDS:
        return False
    ordered = np.sort(values)
    return bool(ordered[-2] - ordered[1] >= math.log1p(MIN_SHIFT))


def _change_points(values: np.ndarray) -> list[int]:
    """Indices into ``values`` where a new regime starts (PELT, binned to MAX_POINTS)."""
    if not _may_split(values):
        return []
    size = math.ceil(values.size / MAX_POINTS)
    binned = np.array([np.median(values[i:i + size]) for i in range(0, values.size, size)])
    min_bins = max(1, math.ceil(MIN_REGIME_ROUNDS / size))
    sigma = _noise(binned)
    if binned.size < 2 * min_bins or sigma == 0:
        return []
    import ruptures

    ends = ruptures.Pelt(model="l1", min_size=min_bins, jump=1).fit(binned.reshape(-1, 1)).predict(
        pen=PENALTY * sigma * math.log(binned.size))
    return [end * size for end in ends[:-1]]


def regime_starts(values: np.ndarray) -> list[int]:
    """Where a new regime starts in ``values``, neighbours closer than MIN_SHIFT joined (the closest pair first)."""
    starts = _change_points(values)
    while starts:
        bounds = [0, *starts, values.size]
        levels = [np.median(values[a:b]) for a, b in zip(bounds, bounds[1:])]
        gaps = np.abs(np.diff(levels))
        closest = int(np.argmin(gaps))
        if gaps[closest] >= math.log1p(MIN_SHIFT):
            break
        del starts[closest]
    return starts


@dataclass(frozen=True)
class Step:
    """A change of level at point ``index`` (the first point after it): each side's level with its 95% interval, and
    what changed across it in words (``torch 2.13.0 -> 2.14.1``; empty where nothing did, or nothing is known)."""

    index: int
    before: Interval
    after: Interval
    what_changed: tuple[str, ...] = ()

    @property
    def change(self) -> float:
        """The relative change from the level before to the level after."""
        return self.after.value / self.before.value - 1.0


def point_variance(point: Interval) -> float:
    """A point's own variance on the log scale, from its 95% interval (0 without one)."""
    if not (point.low > 0 and point.high > 0) or point.high <= point.low:
        return 0.0
    return ((math.log(point.high) - math.log(point.low)) / (2 * Z95)) ** 2


@dataclass(frozen=True)
class _Logs:
    """Points on the log scale: each value's log and its own variance."""

    logs: np.ndarray
    own: np.ndarray

    @classmethod
    def of(cls, points: Sequence[Interval]) -> "_Logs":
        return cls(np.log([p.value for p in points]), np.array([point_variance(p) for p in points]))

    def __getitem__(self, part: slice) -> "_Logs":
        return _Logs(self.logs[part], self.own[part])

    @cached_property
    def typical_own(self) -> float:
        """The median of the points' own variances."""
        return float(np.median(self.own))

    def scatter(self, cuts: Sequence[int]) -> float:
        """The run-to-run scatter beyond the points' own variances, pooled over the segments ``cuts`` bound."""
        segments = np.split(self.logs, cuts)
        free = self.logs.size - len(segments)
        if free < 1:
            return 0.0
        squares = sum(float(np.sum((logs - logs.mean()) ** 2)) for logs in segments if logs.size)
        return math.sqrt(max(0.0, squares / free - self.typical_own))

    def level(self, scatter: float) -> "_Level":
        """The weighted mean of the logs, each weighed by 1 / (own + scatter^2), and its variance."""
        weights = 1.0 / np.maximum(self.own + scatter ** 2, 1e-12)
        return _Level(float(np.sum(weights * self.logs) / np.sum(weights)), float(1.0 / np.sum(weights)))


@dataclass(frozen=True)
class _Level:
    """A segment's level: the weighted mean of its logs, and that mean's variance."""

    mean: float
    variance: float

    def interval(self) -> Interval:
        half = Z95 * math.sqrt(self.variance)
        return Interval(math.exp(self.mean), math.exp(self.mean - half), math.exp(self.mean + half))


@dataclass(frozen=True)
class _Split:
    """Two neighbouring segments' levels, the second starting at ``cut``."""

    cut: int
    before: _Level
    after: _Level

    @property
    def z(self) -> float:
        """How many standard errors the levels lie apart."""
        return abs(self.after.mean - self.before.mean) / math.sqrt(self.before.variance + self.after.variance)

    def step(self, offset: int, threshold: float, z_min: float) -> Optional[Step]:
        """The step at the cut (plus ``offset``) where the levels differ by ``z_min`` and ``threshold``, else None."""
        if not (self.z >= z_min and abs(math.exp(self.after.mean - self.before.mean) - 1.0) >= threshold):
            return None
        return Step(offset + self.cut, self.before.interval(), self.after.interval())


def run_scatter(segments: Sequence[Sequence[Interval]]) -> float:
    """The run-to-run scatter (log scale) beyond the points' own intervals, pooled over ``segments``."""
    return _Logs.of([p for segment in segments for p in segment]).scatter(np.cumsum([len(s) for s in segments])[:-1])


def _splits(points: _Logs, scatter: Optional[float]) -> Iterator[_Split]:
    """Each split leaving MIN_SIDE points a side, its scatter estimated from its two sides where not given."""
    for cut in range(MIN_SIDE, points.logs.size - MIN_SIDE + 1):
        used = points.scatter([cut]) if scatter is None else scatter
        yield _Split(cut, points[:cut].level(used), points[cut:].level(used))


def _split(points: _Logs, offset: int, scatter: Optional[float], threshold: float) -> list[Step]:
    if points.logs.size < 2 * MIN_SIDE:
        return []
    best = max((split for split in _splits(points, scatter) if not math.isnan(split.z)), key=lambda split: split.z,
               default=None)
    step = best.step(offset, threshold, Z_STEP) if best is not None and math.isfinite(best.z) else None
    if step is None:
        return []
    return [*_split(points[:best.cut], offset, scatter, threshold), step,
            *_split(points[best.cut:], step.index, scatter, threshold)]


def find_steps(points: Sequence[Interval], threshold: float = THRESHOLD,
               scatter: Optional[float] = None) -> list[Step]:
    """The steps of a series in order, by binary segmentation (``scatter``: run-to-run; None: estimated)."""
    logs = _Logs.of(points)
    return _split(logs, 0, scatter, threshold) if np.all(np.isfinite(logs.logs)) else []


def against(baseline: Sequence[Interval], point: Interval, threshold: float = THRESHOLD,
            scatter: Optional[float] = None) -> Optional[Step]:
    """``point`` against its baseline's level: a step where it differs beyond noise and ``threshold``, else None."""
    if not baseline:
        return None
    logs = _Logs.of(baseline)
    scatter = logs.scatter([]) if scatter is None else scatter
    return _Split(len(baseline), logs.level(scatter), _Logs.of([point]).level(scatter)).step(0, threshold, Z_POINT)
