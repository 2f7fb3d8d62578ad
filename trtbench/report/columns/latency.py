"""Latency: the median with its 95% CI (two-level: the rounds and the replicate processes, :mod:`trtbench.core.stats`),
the tail, and what ended the timing."""

from __future__ import annotations

from trtbench.report.columns.registry import Column, ColumnSet, register
from trtbench.report.rows import Row, interval_coverage
from trtbench.report.text import ms_text

_SUMMARY = ("mean", "median", "std", "min", "max", "p90", "p95", "p99")


def _median_cell(row: Row) -> str:
    """The median call with its median block's two-level interval, as a share: ``30.092 ±1.6%``."""
    stats = row.record.stats if row.record.timed else None
    return f"{ms_text(stats.median)} ±{_ci_rel(row):.1%}" if stats else ""


def _ci_rel(row: Row) -> float:
    return row.median.rel_halfwidth if row.median is not None else float("inf")


def _p99_cell(row: Row) -> str:
    return ms_text(row.record.stats.p99) if row.record.timed else ""


def _values(row: Row) -> dict:
    r = row.record
    lat = r.stats.to_dict() if r.timed else {}
    dev = r.device_stats.to_dict() if r.timed and r.device_stats else {}
    return {**{f"{k}_ms": lat.get(k) for k in _SUMMARY}, "median_ci_rel": _ci_rel(row) if r.timed else None,
            "device_median_ms": dev.get("median"), "iterations": lat.get("iterations"),
            "rounds": len(set(r.round_ids)) or None, "stopped_by": r.stopped_by, "noisy": lat.get("noisy")}


LATENCY = register(ColumnSet(
    "latency", columns=(Column(lambda rows: f"median ms ({interval_coverage(rows)})", _median_cell),
                        Column("p99 ms", _p99_cell)),
    fields=(*(f"{k}_ms" for k in _SUMMARY), "median_ci_rel", "device_median_ms", "iterations", "rounds",
            "stopped_by", "noisy"),
    values=_values))
