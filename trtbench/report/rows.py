"""The rows of the speedup table: each record with its speedup and interval, ranked by median within its point."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Optional, TypeVar

from trtbench.measure.ceiling import Ceiling
from trtbench.measure.race import STOPPED
from trtbench.core.record import Record
from trtbench.results.resultset import ResultSet
from trtbench.core.stats import Interval

T = TypeVar("T")


def grouped(items: Iterable[T], key: Callable[[T], Hashable]) -> dict[Hashable, list[T]]:
    """``items`` by ``key``, groups and their members in the order first seen."""
    groups: dict[Hashable, list[T]] = {}
    for item in items:
        groups.setdefault(key(item), []).append(item)
    return groups


@dataclass(frozen=True)
class Row:
    """One record as the tables present it."""

    record: Record
    speedup: Optional[Interval]  # over eager fp32 at the same point, from the paired rounds
    fastest: bool
    ceiling: Optional[Ceiling] = None  # the device's FLOP/s ceilings where the record ran
    precision_speedup: Optional[Interval] = None  # over eager at the row's own reduced float precision (fp16, bf16)
    median: Optional[Interval] = None  # the median block with its two-level 95% CI

    @property
    def processes(self) -> int:
        """How many replicate worker processes timed the row (1 for a result written before them)."""
        return self.record.process_count


def interval_coverage(table_rows) -> str:
    """What the intervals of ``table_rows`` cover, for a header: ``95% CI, 3 processes x rounds``."""
    return coverage_of({row.processes for row in table_rows if row.record.timed})


def coverage_of(counts: set[int]) -> str:
    """What intervals over rows timed in ``counts`` replicate processes each cover."""
    if len(counts) != 1:
        return "95% CI, processes x rounds"
    (count,) = counts
    return f"95% CI, {count} process{'es' if count != 1 else ''} x rounds"


def _point_key(r: Record) -> tuple:
    c = r.case
    return (r.environment, c.model, c.precision, c.threads, c.knobs, c.input_shapes)


def rows(results: ResultSet) -> list[Row]:
    """Every record, points in the order first seen, ranked by median within each point (timed first)."""
    out = []
    for records in grouped(results, _point_key).values():
        timed = sorted((r for r in records if r.timed), key=lambda r: r.stats.median)
        passing = [r for r in timed if not r.accuracy_failed and r.stopped_by != STOPPED]  # the race's never win
        best = passing[0] if passing else None
        for r in timed + [r for r in records if not r.timed]:
            out.append(Row(r, results.speedup(r), r is best and len(timed) > 1, results.ceiling_of(r),
                           results.precision_speedup(r), results.median_interval(r)))
    return out
