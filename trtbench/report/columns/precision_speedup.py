"""Speedup over eager at the row's own reduced float precision (fp16 on CUDA, bf16): the second reference of
a reduced-precision row, timed in the same interleaved rounds as it and as eager fp32 (whose speedup
is the primary one). Shown only where some row has it."""

from __future__ import annotations

from typing import Sequence

from trtbench.report.columns.registry import Column, ColumnSet, register
from trtbench.report.columns.speedup import speedup_text
from trtbench.report.rows import Row, interval_coverage


def _shown(rows: Sequence[Row]) -> bool:
    return any(row.precision_speedup is not None for row in rows)


def _values(row: Row) -> dict:
    interval = row.precision_speedup
    return {"precision_speedup": interval.value if interval else None,
            "precision_speedup_low": interval.low if interval else None,
            "precision_speedup_high": interval.high if interval else None}


PRECISION_SPEEDUP = register(ColumnSet(
    "precision_speedup", columns=(Column(lambda rows: f"vs eager same precision [{interval_coverage(rows)}]",
                                                 lambda row: speedup_text(row.precision_speedup)),),
    fields=("precision_speedup", "precision_speedup_low", "precision_speedup_high"), values=_values, shown=_shown))
