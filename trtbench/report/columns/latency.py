"""Latency: the median with its 95% CI, the tail, and what ended the timing."""

from __future__ import annotations

from trtbench.report.columns.registry import Column, ColumnSet, register
from trtbench.report.rows import Row
from trtbench.report.text import ms_text

_SUMMARY = ("mean", "median", "std", "min", "max", "p90", "p95", "p99")


def _median_cell(row: Row) -> str:
    stats = row.record.stats if row.record.timed else None
    return f"{ms_text(stats.median)} ±{stats.median_ci_rel:.1%}" if stats else ""


def _p99_cell(row: Row) -> str:
    return ms_text(row.record.stats.p99) if row.record.timed else ""


def _values(row: Row) -> dict:
    r = row.record
    lat = r.stats.to_dict() if r.timed else {}
    dev = r.device_stats.to_dict() if r.timed and r.device_stats else {}
    return {**{f"{k}_ms": lat.get(k) for k in _SUMMARY}, "median_ci_rel": lat.get("median_ci_rel"),
            "device_median_ms": dev.get("median"), "iterations": lat.get("iterations"),
            "rounds": len(r.rounds) or None, "stopped_by": r.stopped_by, "noisy": lat.get("noisy")}


LATENCY = register(ColumnSet(
    "latency", columns=(Column("median ms (95% CI)", _median_cell), Column("p99 ms", _p99_cell)),
    fields=(*(f"{k}_ms" for k in _SUMMARY), "median_ci_rel", "device_median_ms", "iterations", "rounds",
            "stopped_by", "noisy"),
    values=_values))
