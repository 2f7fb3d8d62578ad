"""What a serving result's repeats give, for either server kind: the peak of each repeat's search, their median and
spread, and the run (or step) that stands for them."""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass
from typing import Callable, ClassVar, Optional, Sequence, TypeVar

from trtbench.core.stats import Interval
from trtbench.scenarios.serving.loadgen.peak_estimate import (LEVEL, READERS, ConfirmNeeds, CurveReader, Search,
                                                              StepReader, StopReason)
from trtbench.scenarios.serving.loadgen.summary import percentile_label

Run = TypeVar("Run")


@dataclass(frozen=True)
class Verdict:
    """LoadGen's verdict on the confirming run at the interval's low end, and the late share that run saw."""

    valid: bool
    late_share: float

    def text(self, low: float, expected: float, reader: str) -> str:
        """``VALID at 41.0``, or INVALID with its late share (and the share ``reader`` ``expected`` there, where it
        saw more)."""
        if self.valid:
            return f"VALID at {low:.1f}"
        if math.isfinite(expected) and self.late_share > expected:
            return (f"INVALID at {low:.1f} (late share {self.late_share:.2%}: more than the {expected:.2%} {reader} "
                    "expected there, which the run was sized to pass)")
        return f"INVALID at {low:.1f} (late share {self.late_share:.2%})"


@dataclass(frozen=True)
class PeakEstimate:
    """A joint estimate's peak with its 90% interval (in results.json, its bounds beside these facts and its value the
    result's peak), why the search stopped, what it took, what a confirming run at the low end needs (None: no
    estimate; an older list ``[late_share, queries]`` read too), LoadGen's verdict on it (None: no run), its reader."""

    estimate: Interval
    stopped_by: StopReason
    queries: int
    seconds: float
    needs: Optional[ConfirmNeeds] = None
    verdict: Optional[Verdict] = None
    read_by: str = CurveReader.name

    def to_dict(self) -> dict:
        verdict = self.verdict
        return {"low": self.estimate.low, "high": self.estimate.high, "stopped_by": self.stopped_by,
                "queries": self.queries, "seconds": round(self.seconds, 3),
                "confirm_valid": verdict.valid if verdict else None,
                "confirm_late_share": verdict.late_share if verdict else None,
                "confirm_needs": None if self.needs is None else asdict(self.needs),
                "read_by": self.read_by}

    @classmethod
    def from_dict(cls, data: Optional[dict], peak: float) -> Optional["PeakEstimate"]:
        """The dict :meth:`to_dict` wrote, its interval about ``peak``."""
        if data is None:
            return None
        needs, valid = data.get("confirm_needs"), data.get("confirm_valid")
        if needs is not None:
            needs = ConfirmNeeds(*needs) if isinstance(needs, list) else ConfirmNeeds(**needs)
        return cls(Interval(peak, data["low"], data["high"], LEVEL), data["stopped_by"], data["queries"],
                   data["seconds"], needs, None if valid is None else Verdict(valid, data["confirm_late_share"]),
                   data.get("read_by", CurveReader.name))

    @property
    def reader(self) -> type[StepReader]:
        return READERS[self.read_by]

    @property
    def confirm_text(self) -> str:
        """LoadGen's verdict at the low end, or why no confirming run was made."""
        needs, reader, low = self.needs or ConfirmNeeds(), self.reader.label, self.estimate.low
        if self.verdict is not None:
            return self.verdict.text(low, needs.late_share, reader)
        if not math.isfinite(needs.late_share):
            return "no confirming run (budget spent)"
        if needs.queries is None:
            return (f"no confirming run: {reader} expects {needs.late_share:.2%} late at {low:.1f}, which no run "
                    "passes by LoadGen's early stopping")
        return (f"no confirming run: LoadGen's early stopping needs {needs.queries} queries to pass at the "
                f"{needs.late_share:.2%} late {reader} expects at {low:.1f}, more than the budget had left")

    def text(self) -> str:
        """``44.1 [41.0-46.5] (90%; 9800 queries, 3.9 min, stopped by budget; LoadGen VALID at 41.0)``."""
        estimate, spent = self.estimate, f"{self.queries} queries, {self.seconds / 60:.1f} min"
        if self.stopped_by == "floor":
            return (f"below {estimate.high:.1f} ({spent}): more than the allowed share late at {estimate.high:.1f} "
                    "QPS, a tenth of the capacity or less, where queries hardly queue: the service time alone misses "
                    "the bound")
        return (f"{estimate.text('.1f')} ({estimate.level:.0%}; {spent}, stopped by {self.stopped_by}; LoadGen "
                f"{self.confirm_text})")


def searched_peak(search: Search, capacity: float, valid: Optional[bool]) -> PeakEstimate:
    """A joint estimate's :class:`PeakEstimate` (0 in [0, capacity] without a crossing; ``valid``: LoadGen's verdict
    on the confirming run, None where none was made)."""
    estimate, confirm = search.estimate, search.confirm
    verdict = None if valid is None else Verdict(valid, confirm.share)
    facts = (search.stopped_by, search.queries, search.seconds)
    if not (math.isfinite(estimate.value) and math.isfinite(estimate.low)):
        return PeakEstimate(Interval(0.0, 0.0, capacity, LEVEL), *facts, None, verdict, search.read_by)
    return PeakEstimate(estimate, *facts, search.confirm_needs, verdict, search.read_by)


class RepeatedPeaks:
    """Mixin of a serving result holding ``peaks``: per repeat, the highest load that passed."""

    WRITTEN_AFTER: ClassVar[dict] = {"peaks": ("peak_qps",)}
    READ_WITH: ClassVar[dict] = {"interval": "peak_qps"}  # the interval about the peak
    peaks: tuple[float, ...]
    interval: Optional[PeakEstimate]  # a joint estimate's (validity: estimate), with its one peak; None otherwise
    percentile: float  # the bounds apply to it (0.99: p99)

    @property
    def percentile_key(self) -> str:
        return percentile_label(self.percentile * 100)

    @property
    def peak_qps(self) -> Optional[float]:
        """The median peak over the repeats (None without a search)."""
        return statistics.median(self.peaks) if self.peaks else None

    @property
    def peak_interval(self) -> Optional[Interval]:
        """A joint estimate's peak with its 90% interval, or the median peak of the repeated searches between their
        lowest and highest (its level nan: no stated coverage); None without a search."""
        if self.interval is not None:
            return self.interval.estimate
        return Interval(self.peak_qps, min(self.peaks), max(self.peaks), math.nan) if self.peaks else None

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
