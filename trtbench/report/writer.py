"""Writes a run's outputs atomically: results.json, results.csv, plots and report.md."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from trtbench import __version__
from trtbench.fsutil import atomic_write_json, atomic_write_text
from trtbench.report.markdown import report_markdown
from trtbench.report.plots import latency_plot, speedup_plot
from trtbench.report.tables import csv_text
from trtbench.results import SCHEMA_VERSION, Result


def results_document(config, environment: dict, results: list[Result], started: datetime, interrupted: bool,
                     profiles: dict | None = None) -> dict:
    """The ``results.json`` document (schema documented in :mod:`trtbench.results`)."""
    document = {
        "schema_version": SCHEMA_VERSION,
        "trtbench_version": __version__,
        "started_at": started.isoformat(timespec="seconds"),
        "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "status": "interrupted" if interrupted else "complete",
        "environment": environment,
        "config": config.to_dict(),
        "results": [r.to_dict() for r in results],
    }
    if profiles is not None:
        document["profiles"] = profiles
    return document


def write_plots(out_dir: Path, results: list[Result]) -> list[Path]:
    """Latency and speedup figures under ``<out>/plots`` (none when no result has timings)."""
    data = [r.to_dict() for r in results]
    plots = [latency_plot(data, out_dir / "plots" / "latency.png"),
             speedup_plot(data, out_dir / "plots" / "speedup.png")]
    return [plot.path for plot in plots if plot is not None]


def write_outputs(out_dir: Path, config, environment: dict, results: list[Result], started: datetime,
                  interrupted: bool, manifest: Path | None, profiles: dict | None = None) -> dict[str, Path]:
    """Write every output file; returns their paths by kind."""
    files = {"json": out_dir / "results.json", "csv": out_dir / "results.csv", "markdown": out_dir / "report.md"}
    atomic_write_json(files["json"], results_document(config, environment, results, started, interrupted, profiles))
    atomic_write_text(files["csv"], csv_text(results))
    plots = [path.relative_to(out_dir) for path in write_plots(out_dir, results)]
    atomic_write_text(files["markdown"], report_markdown(config, environment, results, interrupted, manifest,
                                                         plots, profiles))
    if manifest:
        files["manifest"] = manifest
    return files
