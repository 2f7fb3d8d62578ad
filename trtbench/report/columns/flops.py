"""Achieved FLOP/s: the model's FLOPs at the point over the median latency, with its share of the
device's hardware peak and of its measured matmul ceiling."""

from __future__ import annotations

from typing import Optional, Sequence

from trtbench.report.columns.registry import Column, ColumnSet, register
from trtbench.report.rows import Row


def _share(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.0%}"


def _ceiling_share(row: Row, achieved: Optional[float], which: str) -> Optional[float]:
    return row.ceiling.share(achieved, which) if row.ceiling is not None else None


def flops_text(row: Row) -> str:
    """``412 (62%, 88%)``: achieved GFLOP/s and its share of the hardware peak and of measured matmul."""
    achieved = row.record.achieved_flops_per_s if row.record.timed else None
    if achieved is None:
        return ""
    return (f"{achieved / 1e9:.0f} ({_share(_ceiling_share(row, achieved, 'peak'))}, "
            f"{_share(_ceiling_share(row, achieved, 'measured'))})")


def _shown(rows: Sequence[Row]) -> bool:
    return any(row.record.timed and row.record.achieved_flops_per_s for row in rows)


def _values(row: Row) -> dict:
    achieved = row.record.achieved_flops_per_s if row.record.timed else None
    return {"gflops": achieved / 1e9 if achieved else None, "peak_share": _ceiling_share(row, achieved, "peak"),
            "matmul_share": _ceiling_share(row, achieved, "measured")}


FLOPS = register(ColumnSet("flops", columns=(Column("GFLOP/s (% peak, % matmul)", flops_text),),
                           fields=("gflops", "peak_share", "matmul_share"), values=_values, shown=_shown))
