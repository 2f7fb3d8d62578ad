"""Speedup over eager at the row's own reduced float precision (fp16, bf16), where some row has it."""

from __future__ import annotations

from trtbench.report.columns.registry import Column, ColumnSet, register
from trtbench.report.columns.speedup import interval_values, speedup_text
from trtbench.report.rows import interval_coverage


PRECISION_SPEEDUP = register(ColumnSet(
    "precision_speedup", columns=(Column(lambda rows: f"vs eager same precision [{interval_coverage(rows)}]",
                                                 lambda row: speedup_text(row.precision_speedup)),),
    fields=("precision_speedup", "precision_speedup_low", "precision_speedup_high"),
    values=lambda row: interval_values("precision_speedup", row.precision_speedup),
    shown=lambda rows: any(row.precision_speedup is not None for row in rows)))
