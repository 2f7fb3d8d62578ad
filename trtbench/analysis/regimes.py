"""The machine's regimes: stretches of a point's rounds in which every process of every variant ran at one speed.

More: docs/measuring.md, "Module notes", trtbench/analysis/regimes.py.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Iterable

import numpy as np

from trtbench.core.stats import BlockSeries, Interval, speedup_interval

MIN_REGIME_ROUNDS = 3
MIN_SHIFT = 0.02  # regimes closer than 2% in speed are one
PENALTY = 3.0  # a stationary series with heavy-tailed noise (Student t, 3 degrees of freedom) stays one regime
MAX_POINTS = 60


@dataclass(frozen=True)
class Regime:
    """Rounds ``start`` to ``end`` of a point, ``rounds`` timed, ``slowdown`` times its fastest regime's time."""

    start: int
    end: int
    rounds: int
    slowdown: float

    def text(self) -> str:
        """``rounds 17-36 (20 rounds, 1.19x the fastest's time)``."""
        speed = "the fastest" if self.slowdown == 1.0 else f"{self.slowdown:.2f}x the fastest's time"
        return f"rounds {self.start}-{self.end} ({self.rounds} rounds, {speed})"

    def to_dict(self) -> dict:
        return asdict(self)


def common_factor(series: Iterable[BlockSeries]) -> tuple[np.ndarray, np.ndarray]:
    """(round ids in order, each round's common factor: its blocks' median log speed about their process's)."""
    rounds, centred = [], []
    for one in series:
        logs, processes = np.log(np.asarray(one.medians, dtype=np.float64)), np.asarray(one.processes)
        for process in np.unique(processes):
            mine = processes == process
            centred.append(logs[mine] - np.median(logs[mine]))
            rounds.append(np.asarray(one.rounds)[mine])
    if not rounds:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    round_ids, values = np.concatenate(rounds), np.concatenate(centred)
    order = np.argsort(round_ids, kind="stable")
    round_ids, values = round_ids[order], values[order]
    unique, starts = np.unique(round_ids, return_index=True)
    return unique, np.array([np.median(chunk) for chunk in np.split(values, starts[1:])])


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
    try:
        import ruptures
    except ImportError as err:  # a dependency of trtbench: a broken install
        raise ImportError("trtbench finds the machine's regimes with ruptures, which is not installed: "
                          "pip install ruptures") from err
    ends = ruptures.Pelt(model="l1", min_size=min_bins, jump=1).fit(binned.reshape(-1, 1)).predict(
        pen=PENALTY * sigma * math.log(binned.size))
    return [end * size for end in ends[:-1]]


def _joined(values: np.ndarray, starts: list[int]) -> list[int]:
    """``starts`` less those between neighbours closer than MIN_SHIFT, the closest pair joined first."""
    starts = list(starts)
    while starts:
        bounds = [0, *starts, values.size]
        levels = [np.median(values[a:b]) for a, b in zip(bounds, bounds[1:])]
        gaps = np.abs(np.diff(levels))
        closest = int(np.argmin(gaps))
        if gaps[closest] >= math.log1p(MIN_SHIFT):
            break
        del starts[closest]
    return starts


def find_regimes(series: Iterable[BlockSeries]) -> list[Regime]:
    """The regimes of a point whose variants' blocks are ``series``, in round order."""
    round_ids, factor = common_factor(series)
    if not round_ids.size:
        return []
    starts = _joined(factor, _change_points(factor))
    bounds = [0, *starts, factor.size]
    levels = [float(np.median(factor[a:b])) for a, b in zip(bounds, bounds[1:])]
    fastest = min(levels)
    return [Regime(int(round_ids[a]), int(round_ids[b - 1]), b - a, math.exp(level - fastest))
            for a, b, level in zip(bounds, bounds[1:], levels)]


def regime_speedups(base: BlockSeries, this: BlockSeries, regimes: list[Regime],
                    between_var: float | None = None, resample_processes: bool = True) -> list[Interval | None]:
    """The speedup of ``this`` over ``base`` in each regime; None where the two share no round in it."""
    out = []
    for regime in regimes:
        inside = range(regime.start, regime.end + 1)
        base_in, this_in = base.only_rounds(inside), this.only_rounds(inside)
        out.append(speedup_interval(base_in, this_in, between_var, resample_processes=resample_processes)
                   if set(base_in.rounds) & set(this_in.rounds) else None)
    return out


def regime_dependent(intervals: list[Interval | None]) -> bool:
    """Whether two regimes' speedups differ beyond their intervals (two finite intervals that do not overlap)."""
    finite = [i for i in intervals if i is not None and math.isfinite(i.low) and math.isfinite(i.high)]
    return any(a.high < b.low or b.high < a.low for a in finite for b in finite)


def covering(overall: Interval, intervals: list[Interval | None]) -> Interval:
    """``overall``'s value with an interval that covers every regime's (the union of theirs and its own)."""
    finite = [i for i in intervals if i is not None]
    return Interval(overall.value, min([overall.low] + [i.low for i in finite]),
                    max([overall.high] + [i.high for i in finite]))
