"""The precision a row's conv and matmul kernels ran, as its runtime reported it (:mod:`trtbench.measure.kernels`):
the ``kernels`` column and CSV field."""

from __future__ import annotations

from trtbench.report.columns.registry import Column, ColumnSet, register


def kernels_text(row) -> str:
    """The row's kernels in short (``conv bf16 100% (avx512_core_bf16)``), or ``-`` where none were read."""
    found = row.record.metrics.get("kernels")
    return found["text"] if found else "-"


KERNELS = register(ColumnSet(
    "kernels", columns=(Column("kernels (read from the runtime)", kernels_text),), fields=("kernels",),
    values=lambda row: {"kernels": (row.record.metrics.get("kernels") or {}).get("text")},
    shown=lambda rows: any(row.record.metrics.get("kernels") for row in rows)))
