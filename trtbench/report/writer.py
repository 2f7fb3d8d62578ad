"""Writes a run's outputs atomically: results.json, results.csv, plots and report.md."""

from __future__ import annotations

from pathlib import Path

from trtbench.fsutil import atomic_write_text
from trtbench.report.markdown import report_markdown
from trtbench.report.plots import latency_plot, speedup_plot
from trtbench.report.profile import draw_layer_plots
from trtbench.report.tables import csv_text
from trtbench.resultset import ResultSet


def write_plots(out_dir: Path, results: ResultSet) -> list[Path]:
    """Latency and speedup figures under ``<out>/plots`` (none when no record has timings)."""
    plots = [latency_plot(results, out_dir / "plots" / "latency.png"),
             speedup_plot(results, out_dir / "plots" / "speedup.png")]
    return [plot.path for plot in plots if plot is not None]


def write_outputs(out_dir: Path, config, results: ResultSet, interrupted: bool, manifest: Path | None,
                  profiles: dict | None = None) -> dict[str, Path]:
    """Write every output file; returns their paths by kind."""
    files = {"json": out_dir / "results.json", "csv": out_dir / "results.csv", "markdown": out_dir / "report.md"}
    if profiles is not None:
        draw_layer_plots(profiles, out_dir)
    results.save(files["json"])
    atomic_write_text(files["csv"], csv_text(results))
    plots = [path.relative_to(out_dir) for path in write_plots(out_dir, results)]
    atomic_write_text(files["markdown"], report_markdown(config, results, interrupted, manifest, plots, profiles))
    if manifest:
        files["manifest"] = manifest
    return files
