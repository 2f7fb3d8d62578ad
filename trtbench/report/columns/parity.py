"""Accuracy against eager fp32: the worst errors, top-1 agreement and the verdict."""

from __future__ import annotations

from trtbench.report.columns.registry import Column, Metric, register


def parity_text(parity: dict | None) -> str:
    """``ok``/``FAIL`` with the worst absolute error and top-1 agreement; ``-`` when unchecked."""
    if not parity:
        return "-"
    if parity.get("kind") == "int8":  # judged over the evaluation samples (trtbench.measure.accuracy)
        top1 = parity.get("top1_agree")
        figures = (f"top1 {top1:.1%}, " if top1 is not None else "") + f"SQNR {parity['sqnr_db']:.1f} dB"
        return ("ok" if parity["ok"] else "FAIL") + f" ({figures})"
    if parity.get("max_abs_err") is None:
        return "FAIL (no eager fp32 reference)"
    top1 = parity.get("top1_agree")
    top1_text = f", top1 {top1:.0%}" if top1 is not None else ""
    return ("ok" if parity["ok"] else "FAIL") + f" (abs {parity['max_abs_err']:.1e}{top1_text})"


PARITY = register(Metric(
    "parity", columns=(Column("parity", lambda row: parity_text(row.record.parity)),),
    fields=("max_abs_err", "max_rel_err", "top1_agree", "parity_ok"),
    values=lambda row: {"max_abs_err": (row.record.parity or {}).get("max_abs_err"),
                        "max_rel_err": (row.record.parity or {}).get("max_rel_err"),
                        "top1_agree": (row.record.parity or {}).get("top1_agree"),
                        "parity_ok": (row.record.parity or {}).get("ok")}))
