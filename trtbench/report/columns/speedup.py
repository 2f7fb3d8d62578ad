"""Speedup over eager fp32 at the same point (every precision's reference), with its two-level 95% CI."""

from __future__ import annotations

from typing import Optional

from trtbench.report.columns.registry import Column, ColumnSet, register
from trtbench.report.rows import interval_coverage
from trtbench.core.stats import Interval


def speedup_text(interval: Optional[Interval]) -> str:
    """``1.52x [1.49-1.55]``; the interval is the two-level 95% CI."""
    return "" if interval is None else interval.text(unit="x")


def interval_values(name: str, interval: Optional[Interval]) -> dict:
    """The CSV fields ``name``, ``name_low`` and ``name_high`` of ``interval`` (None where there is none)."""
    return {name: interval.value if interval else None, f"{name}_low": interval.low if interval else None,
            f"{name}_high": interval.high if interval else None}


SPEEDUP = register(ColumnSet(
    "speedup",
    columns=(Column(lambda rows: f"speedup [{interval_coverage(rows)}]", lambda row: speedup_text(row.speedup)),),
    fields=("speedup", "speedup_low", "speedup_high"), values=lambda row: interval_values("speedup", row.speedup)))
