"""What a serving result's repeats give, for either server kind: the peak of each repeat's search, their median and
spread, and the run (or step) that stands for them."""

from __future__ import annotations

import statistics
from typing import Callable, Optional, Sequence, TypeVar

Run = TypeVar("Run")


class RepeatedPeaks:
    """Mixin of a serving result holding ``peaks``: per repeat, the highest offered QPS whose run passed (0 when none
    did); empty for runs at a fixed rate, without a search."""

    peaks: tuple[float, ...]

    @property
    def peak_qps(self) -> Optional[float]:
        """The median peak over the repeats (None without a search)."""
        return statistics.median(self.peaks) if self.peaks else None

    @property
    def peak_spread(self) -> Optional[tuple[float, float]]:
        return (min(self.peaks), max(self.peaks)) if self.peaks else None

    def median_peak_run(self, runs: Sequence[Run], passed: Callable[[Run], bool],
                        completed_qps: Callable[[Run], float]) -> Optional[Run]:
        """The run that ``passed`` at the highest offered QPS in the repeat whose peak is the median; without a
        search, the run whose completed rate is the median. Each run has ``repeat`` and ``offered_qps``."""
        if not runs:
            return None
        if not self.peaks:
            rates = sorted(runs, key=completed_qps)
            return rates[len(rates) // 2]
        repeat = sorted(range(len(self.peaks)), key=lambda i: self.peaks[i])[len(self.peaks) // 2]
        return max((r for r in runs if r.repeat == repeat and passed(r)), key=lambda r: r.offered_qps, default=None)
