"""The one place a report's files are written, atomically: a run's (or a merge's) outputs and the history's page."""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional, Sequence

from matplotlib.layout_engine import PlaceHolderLayoutEngine

from trtbench.core.fsutil import atomic_write_text, json_text
from trtbench.core.outdir import write_files
from trtbench.history.series import Series
from trtbench.report.blocks import Block
from trtbench.report.markdown import report_markdown
from trtbench.report.history_page import history_chart, history_page
from trtbench.report.plots import DPI
from trtbench.report.run_page import PageFigure, run_page
from trtbench.report.section import Plot, ReportSection
from trtbench.report.tables import csv_text
from trtbench.results.resultset import ResultSet


@dataclass(frozen=True)
class ReportHead:
    """What heads a report: its intro's blocks (a run's or a merge's), how the run ended, its artifact manifest."""

    intro: Sequence[Block]
    ended: str = "complete"  # trtbench.core.status.RunStatus: complete, interrupted, failed
    manifest: Optional[Path] = None


def png_files(plots: Iterable[Plot]) -> dict[str, bytes]:
    """Each figure as PNG bytes under its path in the output folder, its artists cleared once drawn."""
    files = {}
    for plot in plots:
        # tight_layout leaves a placeholder engine, for which savefig would draw the figure once more: same bytes
        if isinstance(plot.figure.get_layout_engine(), PlaceHolderLayoutEngine):
            plot.figure.set_layout_engine(None)
        buffer = io.BytesIO()
        plot.figure.savefig(buffer, format="png", dpi=DPI)
        plot.figure.clear()
        files[plot.path] = buffer.getvalue()
    return files


def write_report(out_dir: Path, results: ResultSet, head: ReportHead,
                 sections: Sequence[ReportSection], key: str = "output.dir") -> dict[str, Path]:
    """Write every output file into ``out_dir`` under its lock (refused naming ``key``); the paths by kind."""
    data = results.to_dict()
    for section in sections:
        data.update(section.json)
    plots = [plot for section in sections for plot in section.plots]
    pngs = png_files(plots)
    figures = [PageFigure(plot.caption, str(plot.path), pngs[plot.path]) for plot in plots]
    summary = [block for section in sections for block in section.summary]
    names = {"json": "results.json", "csv": "results.csv", "markdown": "report.md", "html": "report.html"}
    texts = {names["json"]: json_text(data), names["csv"]: csv_text(results),
             names["markdown"]: report_markdown(head, results, [s.markdown for s in sections], summary),
             names["html"]: run_page(head, results, figures, summary)}
    written = write_files(out_dir, {**pngs, **texts}, key=key)
    files = {kind: written[name] for kind, name in names.items()}
    if head.manifest:
        files["manifest"] = head.manifest
    return files


def write_history_page(path: Path, series: Sequence[Series], title: str = "trtbench history") -> Path:
    """The history's page, each series' chart drawn, written atomically to ``path``."""
    charts = [history_chart(one, f"history-{n}.png") for n, one in enumerate(series)]
    atomic_write_text(path, history_page(charts, png_files(chart.plot for chart in charts if chart.plot), title))
    return path


def write_diagnosis(folder: Path, section: ReportSection, stems: Sequence[str]) -> dict[str, Path]:
    """``trtbench diagnose``'s files into ``folder`` (a diagnosis's JSON as ``<stem>.json``); the paths by name."""
    files = {f"{stem}.json": json_text(entry) for stem, entry in zip(stems, section.json["diagnoses"])}
    return write_files(folder, {**files, **png_files(section.plots), "report.md": section.markdown}, key="output.dir")
