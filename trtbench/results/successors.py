"""A deprecated row beside each successor timed at its point: the successor's paired speedup over it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from trtbench.core.deprecation import Deprecation
from trtbench.core.record import Record
from trtbench.core.stats import Interval
from trtbench.results.resultset import ResultSet
from trtbench.variants import variant_class


def deprecations_of(record: Record) -> tuple[Deprecation, ...]:
    """The deprecations of the record's variant that its build, save or load said (their notes in its warnings)."""
    cls = variant_class(record.case.variant)
    return tuple(d for d in (cls.deprecations if cls is not None else ()) if d.note in record.warnings)


@dataclass(frozen=True)
class Successor:
    """``variant``, replacing ``deprecation``, at the deprecated row's point: its record and ``speed`` (>1 faster)."""

    deprecation: Deprecation
    variant: str
    record: Optional[Record] = None
    speed: Optional[Interval] = None

    @property
    def as_fast(self) -> bool:
        """Timed, and within the interval of the deprecated row's speed or faster."""
        return self.speed is not None and self.speed.high >= 1.0

    def verdict(self) -> str:
        """What moving to it costs, in words."""
        if self.record is None:
            return f"not timed at this point: add {self.variant} to `variants` to measure the way out"
        if self.speed is None:
            return "not timed in the same rounds: no paired speed"
        verdict = "faster" if self.speed.low > 1.0 else "within its interval" if self.as_fast else "slower"
        return f"{verdict}: {self.speed.value:.2f}x [{self.speed.low:.2f}-{self.speed.high:.2f}] of its speed"

    def to_dict(self) -> dict:
        return {"variant": self.variant, "deprecation": self.deprecation.note,
                "case_key": self.record.case.key if self.record is not None else None,
                "median_ms": self.record.stats.median if self.record is not None and self.record.timed else None,
                "speed": self.speed.to_dict() if self.speed is not None else None, "as_fast": self.as_fast}


def successors(results: ResultSet, record: Record) -> list[Successor]:
    """Each successor of each deprecation ``record`` carries, at its point, precision and environment, in order."""
    found = []
    for deprecation in deprecations_of(record):
        for name in deprecation.successors:
            there = next((r for r in results if r.case.variant == name and r.timed and r.environment ==
                          record.environment and r.case.precision == record.case.precision
                          and r.case.baseline_id == record.case.baseline_id), None)
            speed = results.analysis.paired_speedup(record, there) if there is not None else None
            found.append(Successor(deprecation, name, there, speed))
    return found
