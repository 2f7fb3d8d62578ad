"""Latency: the median with its two-level 95% CI, the tail, and what ended the timing, in host times."""

from __future__ import annotations

from typing import Sequence

from trtbench.core.record import Record
from trtbench.report.columns.registry import Column, ColumnSet, register
from trtbench.report.rows import Row, interval_coverage
from trtbench.report.text import ms_text
from trtbench.variants.ort_common import CUDA, TENSORRT

_SUMMARY = ("mean", "median", "std", "min", "max", "p90", "p95", "p99")


def _median_cell(row: Row) -> str:
    """The median call with its median block's two-level interval, as a share: ``30.092 ±1.6%``."""
    stats = row.record.stats if row.record.timed else None
    return f"{ms_text(stats.median)} ±{_ci_rel(row):.1%}" if stats else ""


def _ci_rel(row: Row) -> float:
    return row.median.rel_halfwidth if row.median is not None else float("inf")


def own_stream(record: Record) -> bool:
    """Whether ``record``'s runtime ran its CUDA work on a stream of its own, which torch's CUDA events miss."""
    providers = ((record.build or {}).get("info") or {}).get("providers") or [None]
    return providers[0] in (CUDA, TENSORRT)


def own_stream_note(rows: Sequence[Row]) -> list[str]:
    """The rows whose CUDA-event times mean little (:func:`own_stream`), and which times they are read by."""
    named = sorted({f"{row.record.case.label} {row.record.case.precision}" for row in rows
                    if row.record.timed and own_stream(row.record)})
    if not named:
        return []
    return [f"{', '.join(named)}: ONNX Runtime's CUDA provider runs on a stream of its own, so the CUDA events "
            "recorded on torch's stream around each call do not bracket its kernels; their times here are host times "
            "(the call returns once its outputs are ready), and results.csv leaves their device_median_ms empty."]


def _values(row: Row) -> dict:
    r = row.record
    lat = r.stats.to_dict() if r.timed else {}
    dev = r.device_stats.to_dict() if r.timed and r.device_stats and not own_stream(r) else {}
    return {**{f"{k}_ms": lat.get(k) for k in _SUMMARY}, "median_ci_rel": _ci_rel(row) if r.timed else None,
            "device_median_ms": dev.get("median"), "iterations": lat.get("iterations"),
            "rounds": len(set(r.round_ids)) or None, "stopped_by": r.stopped_by, "noisy": lat.get("noisy")}


LATENCY = register(ColumnSet(
    "latency", columns=(Column(lambda rows: f"median ms ({interval_coverage(rows)})", _median_cell),
                        Column("p99 ms", lambda row: ms_text(row.record.stats.p99) if row.record.timed else "")),
    fields=(*(f"{k}_ms" for k in _SUMMARY), "median_ci_rel", "device_median_ms", "iterations", "rounds",
            "stopped_by", "noisy"),
    values=_values))
