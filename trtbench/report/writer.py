"""Writes a run's (or a merge's) outputs atomically: results.json, results.csv, plots and report.md; the one
place a report's files are written.

Each scenario's section (:class:`~trtbench.report.section.ReportSection`: its Markdown, its results.json entries
and its figures, as data) comes in from the caller, which asks every registered scenario for it
(:meth:`trtbench.scenarios.base.Scenario.report`): the report itself names no scenario."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional, Sequence

from trtbench.core.fsutil import atomic_write, atomic_write_json, atomic_write_text
from trtbench.report.markdown import report_markdown
from trtbench.report.plots import DPI
from trtbench.report.section import Plot, ReportSection
from trtbench.report.tables import csv_text
from trtbench.results.resultset import ResultSet


@dataclass(frozen=True)
class ReportHead:
    """What heads a report: its intro lines (a run's, from its config, or a merge's), how the run ended,
    and its artifact manifest."""

    intro: Sequence[str]
    ended: str = "complete"  # trtbench.core.status.RunStatus: complete, interrupted, failed
    manifest: Optional[Path] = None


def save_plots(out_dir: Path, plots: Iterable[Plot]) -> list[Path]:
    """Save each figure as a PNG at its path under ``out_dir``, atomically, and close it (its artists cleared: this
    is its last reader). Returns the files' paths."""
    paths = []
    for plot in plots:
        path = out_dir / plot.path
        atomic_write(path, lambda tmp: plot.figure.savefig(tmp, format="png", dpi=DPI))
        plot.figure.clear()
        paths.append(path)
    return paths


def write_report(out_dir: Path, results: ResultSet, head: ReportHead,
                 sections: Sequence[ReportSection]) -> dict[str, Path]:
    """Write every output file; ``sections`` are the scenarios', in order: their Markdown, their entries for
    results.json and their figures (under ``plots/``). Returns the files' paths by kind."""
    data = results.to_dict()
    for section in sections:
        data.update(section.json)
    texts = {"csv": csv_text(results), "markdown": report_markdown(head, results, [s.markdown for s in sections])}
    files = {"json": out_dir / "results.json", "csv": out_dir / "results.csv", "markdown": out_dir / "report.md"}
    save_plots(out_dir, [plot for section in sections for plot in section.plots])
    atomic_write_json(files["json"], data)
    for kind, text in texts.items():
        atomic_write_text(files[kind], text)
    if head.manifest:
        files["manifest"] = head.manifest
    return files
