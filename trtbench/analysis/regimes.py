"""The machine's regimes: stretches of a point's rounds run at one speed (docs/measuring.md, "Module notes")."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Iterable

import numpy as np

from trtbench.analysis.change_points import regime_starts
from trtbench.core.stats import BlockSeries, Interval, speedup_interval


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


def find_regimes(series: Iterable[BlockSeries]) -> list[Regime]:
    """The regimes of a point whose variants' blocks are ``series``, in round order."""
    round_ids, factor = common_factor(series)
    if not round_ids.size:
        return []
    starts = regime_starts(factor)
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
