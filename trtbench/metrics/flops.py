"""Achieved FLOP/s: the model's FLOPs at the point over the median latency, with its share of the
device's hardware peak and of its measured matmul ceiling."""

from __future__ import annotations

from typing import Optional, Sequence

from trtbench.metrics.registry import Column, Metric, register
from trtbench.record import Record
from trtbench.report.rows import Row


def _share(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.0%}"


def flops_text(r: Record) -> str:
    """``412 (62%, 88%)``: achieved GFLOP/s and its share of the hardware peak and of measured matmul."""
    achieved = r.achieved_flops_per_s if r.timed else None
    if achieved is None:
        return ""
    return f"{achieved / 1e9:.0f} ({_share(r.ceiling_share('peak'))}, {_share(r.ceiling_share('measured'))})"


def _shown(rows: Sequence[Row]) -> bool:
    return any(row.record.timed and row.record.achieved_flops_per_s for row in rows)


def _values(row: Row) -> dict:
    r = row.record
    achieved = r.achieved_flops_per_s if r.timed else None
    return {"gflops": achieved / 1e9 if achieved else None, "peak_share": r.ceiling_share("peak") if achieved else None,
            "matmul_share": r.ceiling_share("measured") if achieved else None}


FLOPS = register(Metric("flops", columns=(Column("GFLOP/s (% peak, % matmul)", lambda row: flops_text(row.record)),),
                        fields=("gflops", "peak_share", "matmul_share"), values=_values, shown=_shown))
