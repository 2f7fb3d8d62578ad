"""The precision a row's conv and matmul kernels ran (:mod:`trtbench.measure.kernels`), column and CSV field."""

from __future__ import annotations

from trtbench.report.columns.registry import Column, ColumnSet, register


KERNELS = register(ColumnSet(
    "kernels", columns=(Column("kernels (read from the runtime)", lambda row: row.record.kernels_text or "-"),),
    fields=("kernels",), values=lambda row: {"kernels": row.record.kernels_text or None},
    shown=lambda rows: any(row.record.kernels_text for row in rows)))
