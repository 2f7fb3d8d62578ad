"""Accuracy against eager fp32: the ``parity`` column and CSV fields."""

from __future__ import annotations

from trtbench.measure.accuracy import INT8
from trtbench.report.columns.registry import Column, ColumnSet, register


def accuracy_text(accuracy: dict | None) -> str:
    """``ok``/``FAIL`` with the worst absolute error and top-1 agreement; ``-`` when unchecked."""
    if not accuracy:
        return "-"
    if accuracy.get("kind") == INT8:
        top1, timed = accuracy.get("top1_agree"), accuracy.get("where_timed")
        figures = (f"top1 {top1:.1%}, " if top1 is not None else "") + f"SQNR {accuracy['sqnr_db']:.1f} dB"
        figures += f"; where timed SQNR {timed['sqnr_db']:.1f} dB" if timed else ""
        return ("ok" if accuracy["ok"] else "FAIL") + f" ({figures})"
    if accuracy.get("max_abs_err") is None:
        return "FAIL (no eager fp32 reference)"
    top1 = accuracy.get("top1_agree")
    top1_text = f", top1 {top1:.0%}" if top1 is not None else ""
    return ("ok" if accuracy["ok"] else "FAIL") + f" (abs {accuracy['max_abs_err']:.1e}{top1_text})"


ACCURACY = register(ColumnSet(
    "accuracy", columns=(Column("parity", lambda row: accuracy_text(row.record.accuracy)),),
    fields=("max_abs_err", "max_rel_err", "top1_agree", "parity_ok"),
    values=lambda row: {"max_abs_err": (row.record.accuracy or {}).get("max_abs_err"),
                        "max_rel_err": (row.record.accuracy or {}).get("max_rel_err"),
                        "top1_agree": (row.record.accuracy or {}).get("top1_agree"),
                        "parity_ok": (row.record.accuracy or {}).get("ok")}))
