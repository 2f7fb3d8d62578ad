"""The analysis of a set of records: medians, speedups, pooled variance, regimes, spread; every reader asks here."""

from __future__ import annotations

import math
from typing import Callable, Iterable, Optional

import numpy as np

from trtbench.analysis.race import PointAnswer, point_answer
from trtbench.analysis.regimes import Regime, covering, find_regimes, regime_dependent, regime_speedups
from trtbench.core.record import Record
from trtbench.core.stats import (BlockSeries, Interval, bootstrap_median_ratio, median_interval,
                                 pooled_between_variance, speedup_interval, unpaired_interval)

DISAGREE = 0.03  # processes this far apart (beyond their intervals) are named: identical ones differ by 1-3%


class Analysis:
    """The figures of ``records``, each computed once, speedups over ``baseline(record)``."""

    def __init__(self, records: Iterable[Record], baseline: Callable[[Record], Optional[Record]] = lambda r: None):
        self._timed, self._baseline = [r for r in records if r.timed], baseline
        self._memo: dict = {}
        self._points: dict[tuple, list[Record]] = {}
        for r in self._timed:
            self._points.setdefault((r.case.baseline_id, r.environment), []).append(r)

    def _once(self, key: tuple, compute):
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    def between_variance(self, environment: Optional[str] = None) -> Optional[float]:
        """The pooled between-process variance (log scale) of ``environment``'s timed records."""
        return self._once(("between", environment), lambda: pooled_between_variance(
            [r.block_series for r in self._timed if environment in (None, r.environment)]))

    def median_interval(self, record: Record) -> Optional[Interval]:
        """The record's median block with its two-level 95% CI (None when not timed)."""
        return self._once(("median", record.key), lambda: median_interval(
            record.block_series, self.between_variance(record.environment))) if record.timed else None

    def answer(self, record: Record) -> Optional[PointAnswer]:
        """The answer at the record's point: the winner, or the variants tied (:mod:`trtbench.analysis.race`)."""
        key = (record.case.baseline_id, record.environment)
        return self._once(("answer", key), lambda: point_answer(self._points.get(key, []),
                                                                self.between_variance(record.environment)))

    def points(self) -> list[tuple[list[Record], list[Regime]]]:
        """Each point's timed records with its regimes, in the order first seen."""
        return [(records, self.regimes(records[0])) for records in self._points.values()]

    def regimes(self, record: Record) -> list[Regime]:
        """The machine's regimes at the record's point."""
        key = (record.case.baseline_id, record.environment)
        return self._once(("regimes", key), lambda: find_regimes([r.block_series for r in self._points.get(key, [])]))

    def regime_speedups(self, record: Record) -> list[Optional[Interval]]:
        """The record's speedup over its baseline in each regime of its point; empty under 2 regimes."""
        base = self._baseline(record)
        regimes = self.regimes(record) if record.timed else []
        if len(regimes) < 2 or base is None or base is record or not base.timed:
            return []
        return self._once(("regime speedups", base.key, record.key), lambda: regime_speedups(
            base.block_series, record.block_series, regimes, self.between_variance(record.environment)))

    def regime_dependent(self, record: Record) -> bool:
        """Whether the record's speedup differs between its point's regimes beyond their rounds' intervals."""
        base = self._baseline(record)
        if not self.regime_speedups(record):
            return False
        return self._once(("regime dependent", base.key, record.key), lambda: regime_dependent(regime_speedups(
            base.block_series, record.block_series, self.regimes(record), resample_processes=False)))

    def paired_speedup(self, base: Optional[Record], record: Record) -> Optional[Interval]:
        """``record``'s paired speedup over ``base`` with its two-level 95% CI; None without a shared round."""
        if base is None or base is record or not (base.timed and record.timed):
            return None
        return self._once(("speedup", base.key, record.key), lambda: self._paired(base, record))

    def unpaired_speedup(self, base: Record, record: Record) -> Optional[Interval]:
        """``base``'s median call over ``record``'s, timed in different rounds, with its unpaired 95% CI."""
        if not (base.timed and record.timed):
            return None
        interval = unpaired_interval(base.block_series, record.block_series, self.between_variance(record.environment))
        return interval.with_value(base.stats.median / record.stats.median)

    def _paired(self, base: Record, record: Record) -> Optional[Interval]:
        pair = (base.block_series, record.block_series)
        if not set(pair[0].rounds) & set(pair[1].rounds):
            return None
        overall = speedup_interval(*pair, self.between_variance(record.environment))
        if len(self.regimes(record)) < 2 or base is not self._baseline(record):
            return overall
        return covering(overall, self.regime_speedups(record)) if self.regime_dependent(record) else overall


def process_spread(record: Record) -> Optional[float]:
    """The slowest process's median block over the fastest's, less 1 (0.021: 2.1% apart); None under 2 processes."""
    if not record.timed or record.process_count < 2:
        return None
    medians = record.block_series.process_medians().values()
    return max(medians) / min(medians) - 1


def processes_disagree(record: Record) -> bool:
    """Whether two of the record's processes lie DISAGREE or more apart beyond their own intervals."""
    if not record.timed or record.process_count < 2:
        return False
    series = record.block_series
    own = [median_interval(series.only_processes([p])) for p in sorted(set(series.processes))]
    finite = [i for i in own if math.isfinite(i.low) and math.isfinite(i.high)]
    return any(a.high < b.low and b.value / a.value - 1 >= DISAGREE for a in finite for b in finite)


def runs_ratio(base_calls, new_calls, base: BlockSeries, new: BlockSeries, between_var: Optional[float]) -> Interval:
    """median(base_calls) / median(new_calls) of one case timed by two runs, with its unpaired 95% CI."""
    if min(len(set(base.rounds)), len(set(new.rounds))) < 3:
        return bootstrap_median_ratio(base_calls, new_calls)
    ratio = float(np.median(base_calls)) / float(np.median(new_calls))
    return unpaired_interval(base, new, between_var).with_value(ratio)
