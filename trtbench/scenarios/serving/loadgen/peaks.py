"""What a serving result's repeats give, for either server kind: the peak of each repeat's search, their median and
spread, and the run (or step) that stands for them."""

from __future__ import annotations

import dataclasses
import math
import statistics
from dataclasses import dataclass
from typing import Callable, Optional, Sequence, TypeVar

from trtbench.scenarios.serving.loadgen.peak_estimate import (READERS, ConfirmNeeds, CurveReader, Search, StepReader,
                                                              StopReason)
from trtbench.scenarios.serving.loadgen.summary import percentile_label

Run = TypeVar("Run")


@dataclass(frozen=True)
class PeakInterval:
    """What a joint estimate gives beside its peak: the 90% interval, why the search stopped, what it took, LoadGen's
    verdict on the confirming run (None: no room for it) and what that run needs (read from a list
    ``[late_share, queries]`` in results written before it was named), and the name of the reader that read the
    steps."""

    low: float
    high: float
    stopped_by: StopReason
    queries: int
    seconds: float
    confirm_valid: Optional[bool] = None
    confirm_late_share: Optional[float] = None
    confirm_needs: Optional[ConfirmNeeds] = None
    read_by: str = CurveReader.name

    def to_dict(self) -> dict:
        return {"low": self.low, "high": self.high, "stopped_by": self.stopped_by, "queries": self.queries,
                "seconds": round(self.seconds, 3), "confirm_valid": self.confirm_valid,
                "confirm_late_share": self.confirm_late_share,
                "confirm_needs": None if self.confirm_needs is None else dataclasses.asdict(self.confirm_needs),
                "read_by": self.read_by}

    @classmethod
    def from_dict(cls, data: Optional[dict]) -> Optional["PeakInterval"]:
        if data is None:
            return None
        needs = data.get("confirm_needs")
        if isinstance(needs, list):
            needs = ConfirmNeeds(*needs)
        elif needs is not None:
            needs = ConfirmNeeds(**needs)
        return cls(**{**data, "confirm_needs": needs})

    @property
    def reader(self) -> type[StepReader]:
        return READERS[self.read_by]

    @property
    def confirm_text(self) -> str:
        """LoadGen's verdict at the low end, or why no confirming run was made."""
        needs, reader = self.confirm_needs, self.reader.label
        if self.confirm_valid is None and needs is not None and math.isfinite(needs.late_share):
            share, needed = needs.late_share, needs.queries
            if needed is None:
                return (f"no confirming run: {reader} expects {share:.2%} late at {self.low:.1f}, "
                        "which no run passes by LoadGen's early stopping")
            return (f"no confirming run: LoadGen's early stopping needs {needed} queries to pass at the {share:.2%} "
                    f"late {reader} expects at {self.low:.1f}, more than the budget had left")
        if self.confirm_valid is None:
            return "no confirming run (budget spent)"
        if self.confirm_valid:
            return f"VALID at {self.low:.1f}"
        expected = self.confirm_needs.late_share if self.confirm_needs is not None else math.nan
        if math.isfinite(expected) and self.confirm_late_share > expected:
            return (f"INVALID at {self.low:.1f} (late share {self.confirm_late_share:.2%}: more than the "
                    f"{expected:.2%} {reader} expected there, which the run was sized to pass)")
        return f"INVALID at {self.low:.1f} (late share {self.confirm_late_share:.2%})"

    def text(self, peak: float) -> str:
        """``44.1 [41.0-46.5] (90%; 9800 queries, 3.9 min, stopped by budget; LoadGen VALID at 41.0)``."""
        if self.stopped_by == "floor":
            return (f"below {self.high:.1f} ({self.queries} queries, {self.seconds / 60:.1f} min): more than the "
                    f"allowed share late at {self.high:.1f} QPS, a tenth of the capacity or less, where queries hardly "
                    "queue: the service time alone misses the bound")
        return (f"{peak:.1f} [{self.low:.1f}-{self.high:.1f}] (90%; {self.queries} queries, {self.seconds / 60:.1f} "
                f"min, stopped by {self.stopped_by}; LoadGen {self.confirm_text})")


def searched_peak(search: Search, capacity: float, confirm_valid: Optional[bool]) -> tuple[float, PeakInterval]:
    """A joint estimate's peak and :class:`PeakInterval` (0 in [0, capacity] without a crossing)."""
    estimate = search.estimate
    share = search.confirm.share if search.confirm is not None else None
    if not (math.isfinite(estimate.qps) and math.isfinite(estimate.low)):
        return 0.0, PeakInterval(0.0, capacity, search.stopped_by, search.queries, search.seconds, confirm_valid, share,
                                 read_by=search.read_by)
    return estimate.qps, PeakInterval(estimate.low, estimate.high, search.stopped_by, search.queries, search.seconds,
                                      confirm_valid, share, search.confirm_needs, search.read_by)


class RepeatedPeaks:
    """Mixin of a serving result holding ``peaks``: per repeat, the highest load that passed."""

    peaks: tuple[float, ...]
    interval: Optional[PeakInterval]  # a joint estimate's (validity: estimate), with its one peak; None otherwise
    percentile: float  # the bounds apply to it (0.99: p99)

    @property
    def percentile_key(self) -> str:
        return percentile_label(self.percentile * 100)

    @property
    def peak_qps(self) -> Optional[float]:
        """The median peak over the repeats (None without a search)."""
        return statistics.median(self.peaks) if self.peaks else None

    @property
    def peak_spread(self) -> Optional[tuple[float, float]]:
        """A joint estimate's 90% interval, or the lowest and highest peak of the repeated searches."""
        if self.interval is not None:
            return self.interval.low, self.interval.high
        return (min(self.peaks), max(self.peaks)) if self.peaks else None

    def median_peak_run(self, runs: Sequence[Run], passed: Callable[[Run], bool],
                        completed_qps: Callable[[Run], float]) -> Optional[Run]:
        """The run that stands for the peak: the median repeat's highest that ``passed``, or its confirming run."""
        if self.interval is not None:
            return next((r for r in runs if r.confirm), None)
        if not runs:
            return None
        if not self.peaks:
            rates = sorted(runs, key=completed_qps)
            return rates[len(rates) // 2]
        repeat = sorted(range(len(self.peaks)), key=lambda i: self.peaks[i])[len(self.peaks) // 2]
        return max((r for r in runs if r.repeat == repeat and passed(r)), key=lambda r: r.offered_qps, default=None)
