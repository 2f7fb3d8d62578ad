"""Speedup over eager fp32 at the same point (every precision's reference), with its two-level 95% CI: the
rounds both were timed in, resampled together, and each one's replicate processes (:mod:`trtbench.core.stats`)."""

from __future__ import annotations

from typing import Optional

from trtbench.report.columns.registry import Column, ColumnSet, register
from trtbench.report.rows import interval_coverage
from trtbench.core.stats import Interval


def speedup_text(interval: Optional[Interval]) -> str:
    """``1.52x [1.49-1.55]``; the interval is the two-level 95% CI."""
    if interval is None:
        return ""
    if interval.low == float("-inf"):
        return f"{interval.value:.2f}x"
    return f"{interval.value:.2f}x [{interval.low:.2f}-{interval.high:.2f}]"


SPEEDUP = register(ColumnSet(
    "speedup",
    columns=(Column(lambda rows: f"speedup [{interval_coverage(rows)}]", lambda row: speedup_text(row.speedup)),),
    fields=("speedup", "speedup_low", "speedup_high"),
    values=lambda row: {"speedup": row.speedup.value if row.speedup else None,
                        "speedup_low": row.speedup.low if row.speedup else None,
                        "speedup_high": row.speedup.high if row.speedup else None}))
