"""The serving section of a report: a table of each variant's peak QPS under its bound, and a plot of the
bound's latency percentile against the offered QPS, one line per variant and worker count."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Optional

from matplotlib.figure import Figure

from trtbench.core.env import environment_name
from trtbench.core.record import Record
from trtbench.report.colors import VariantColors, legend_beside, marker, variant_colors
from trtbench.report.plots import save_figure
from trtbench.report.text import number_text
from trtbench.results.resultset import ResultSet
from trtbench.scenarios.serving_result import ServingResult

COLUMNS = ("model", "variant", "precision", "workers x threads", "runtime threads", "batching",
           "peak QPS within bound", "p50 ms", "p90 ms", "p99 ms", "bound", "LoadGen verdict", "service ms",
           "batch sizes used", "status", "LoadGen logs")


def served(results: ResultSet) -> list[tuple[Record, ServingResult]]:
    """Every (record, serving result), in record order."""
    return [(record, result) for record in results for result in results.serving_of(record)]


def _cells(record: Record, result: ServingResult, environments: dict, several_envs: bool) -> list[str]:
    run = result.peak_run
    lat = run.summary.latency_ms if run else {}
    if result.peaks:
        low, high = result.peak_spread
        searches = f"{len(result.peaks)} search" + ("es" if len(result.peaks) > 1 else "")
        peak = f"{result.peak_qps:.1f} [{low:.1f}-{high:.1f}] ({searches})"
    else:
        peak = f"{run.summary.completed_qps:.1f} completed at {run.offered_qps:g} offered" if run and \
            run.summary.completed_qps is not None else ""
    histogram = ", ".join(f"{size}: {calls}" for size, calls in result.batch_histogram.items())
    verdict = ("VALID" if run.summary.valid else "INVALID") if run else ""
    model = record.case.model + (f" ({environment_name(environments.get(record.environment, {}))})"
                                 if several_envs else "")
    status = result.status + (f": {result.reason}" if result.reason else "")
    facts = result.worker_facts
    runtime = facts.get("runtime_threads", facts.get("intra_op_threads", ""))
    return [model, record.case.label, record.case.precision, f"{result.workers} x {result.threads}", str(runtime),
            result.batching_text, peak,
            number_text(lat.get("p50"), 2), number_text(lat.get("p90"), 2), number_text(lat.get("p99"), 2),
            f"{result.percentile_key} <= {result.bound_ms:g} ms", verdict, number_text(result.service_ms, 2), histogram,
            status.replace("\n", " "), f"`{result.log_dir}/`"]


def serving_markdown(results: ResultSet, plots: list[Path]) -> str:
    """The report's serving section (empty when nothing was served)."""
    pairs = served(results)
    if not pairs:
        return ""
    several = len({record.environment for record, _ in pairs}) > 1
    lines = ["## Serving under load (MLPerf LoadGen, Server scenario)", "",
             "Poisson arrivals from LoadGen at each offered QPS; each variant hosted by worker processes (workers x "
             "intra-op threads each), one synchronized call per query (or per gathered batch). Peak QPS: the median "
             "over the repeated searches of the highest offered QPS whose run stayed within the bound "
             "[lowest-highest]; the latencies are LoadGen's, at that peak. Verdict: LoadGen's own (it also needs its "
             "early-stopping test, i.e. enough queries to show the percentile). Service: one query alone in a worker.",
             "", "| " + " | ".join(COLUMNS) + " |", "|" + "|".join("---" for _ in COLUMNS) + "|"]
    lines += ["| " + " | ".join(c.replace("|", "/") for c in _cells(record, result, results.environments, several))
              + " |" for record, result in pairs]
    lines += [""] + [f"![{path.stem}]({path.as_posix()})" for path in plots] + ([""] if plots else [])
    return "\n".join(lines) + "\n"


def _series_name(record: Record, result: ServingResult, several_models: bool) -> str:
    return (f"{record.case.model} " if several_models else "") + f"{record.case.label} {record.case.precision} " \
        f"{result.label}" + ("" if result.peaks else " (fixed load)")


def serving_plot(results: ResultSet, path: Path, colors: VariantColors | None = None) -> Optional[Path]:
    """The bound's percentile (LoadGen's) against offered QPS, a line per variant and serving configuration
    through the median over repeats at each offered QPS (each run a dot), in its variant's colour (``colors``:
    the run's; by default, from ``results``), a variant's lines told apart by marker; each bound drawn as a
    dashed line; None when nothing was served."""
    pairs = [(record, result) for record, result in served(results) if result.runs]
    if not pairs:
        return None
    fig = Figure(figsize=(10.0, 4.8))
    ax = fig.add_subplot()
    several_models = len({record.case.model for record, _ in pairs}) > 1
    styles = (colors or variant_colors(results)).styles(
        {_series_name(record, result, several_models): record.case.label for record, result in pairs})
    for record, result in pairs:
        at: dict[float, list[float]] = {}  # offered QPS -> the percentile of each run there (repeats)
        for run in result.runs:
            if run.summary.latency_ms.get(result.percentile_key) is not None:
                at.setdefault(round(run.offered_qps, 3), []).append(run.summary.latency_ms[result.percentile_key])
        name = _series_name(record, result, several_models)
        color, rank = styles[name]
        qps = sorted(at)
        ax.plot(qps, [statistics.median(at[q]) for q in qps], marker=marker(rank), markersize=3, color=color, label=name)
        ax.scatter([q for q in qps for _ in at[q]], [ms for q in qps for ms in at[q]], s=8, alpha=0.4, color=color)
    for bound, key in sorted({(result.bound_ms, result.percentile_key) for _, result in pairs}):
        ax.axhline(bound, color="black", linestyle="--", linewidth=0.8)
        ax.annotate(f"bound: {key} <= {bound:g} ms", (0, bound), xycoords=("axes fraction", "data"),
                    textcoords="offset points", xytext=(4, 3), fontsize="small")
    ax.set_yscale("log")
    ax.set_xlabel("offered QPS (LoadGen server_target_qps)")
    ax.set_ylabel("latency at the bound's percentile (ms)")
    ax.set_title("Serving: latency percentile vs offered load")
    ax.grid(alpha=0.3)
    legend_beside(ax, fontsize="small")
    fig.tight_layout()
    return save_figure(fig, path).path
