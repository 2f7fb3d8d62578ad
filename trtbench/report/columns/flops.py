"""Achieved FLOP/s, with its share of the device's peak and of its measured matmul ceiling."""

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


def peak_notes(rows: Sequence[Row]) -> list[str]:
    """What "% peak" is a share of, once per ceiling the shown rows use; then the rows above 100% of their peak."""
    if not _shown(rows):
        return []
    ceilings = {row.ceiling.key: row.ceiling for row in rows
                if row.ceiling is not None and row.record.timed and row.ceiling.values.get("peak_flops_per_s")}
    notes = []
    for ceiling in ceilings.values():
        values = ceiling.values
        clock = (f"; clock {values['peak_clock_ghz']:.2f} GHz from {values['peak_clock_source']}"
                 if values.get("peak_clock_ghz") and values.get("peak_clock_source") else "")
        notes.append(f"% peak on {ceiling.device} ({ceiling.dtype}, {ceiling.threads} threads) is of "
                     f"{values['peak_flops_per_s'] / 1e9:.0f} GFLOP/s ({values.get('peak_method')}{clock})"
                     + (f": {values['peak_note']}." if values.get("peak_note") else ".")
                     + (f" {values['math_note']}." if values.get("math_note") else ""))
    return notes + over_peak_note(rows)


def over_peak_note(rows: Sequence[Row]) -> list[str]:
    """The rows whose achieved FLOP/s read above 100% of the hardware peak, with the likely cause."""
    over = [f"{row.record.case.label} {row.record.case.precision} {row.record.case.point} ({share:.0%})" for row in rows
            if row.record.timed and (share := _ceiling_share(row, row.record.achieved_flops_per_s, "peak") or 0) > 1]
    if not over:
        return []
    return [f"above 100% of the peak: {', '.join(over)}. The FLOPs are counted from the model's operators as written "
            "(torch.utils.flop_counter); a backend that runs an algorithm doing fewer (Winograd- or FFT-like "
            "convolutions, fused or pruned work) reads above the peak, as does a clock above the one the peak assumes; "
            "the time is measured, the FLOP count is what overstates the work."]


def _values(row: Row) -> dict:
    achieved = row.record.achieved_flops_per_s if row.record.timed else None
    return {"gflops": achieved / 1e9 if achieved else None, "peak_share": _ceiling_share(row, achieved, "peak"),
            "matmul_share": _ceiling_share(row, achieved, "measured")}


FLOPS = register(ColumnSet("flops", columns=(Column("GFLOP/s (% peak, % matmul)", flops_text),),
                           fields=("gflops", "peak_share", "matmul_share"), values=_values, shown=_shown))
