"""Writes a run's (or a merge's) outputs atomically: results.json, results.csv, plots and report.md.

Each scenario's section (its tables, plots and recommendations) comes in from the caller, which asks
every registered scenario for it (:meth:`trtbench.scenarios.base.Scenario.report`): the report itself
names no scenario."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

from trtbench.core.fsutil import atomic_write_json, atomic_write_text
from trtbench.report.markdown import report_markdown
from trtbench.report.tables import csv_text
from trtbench.results.resultset import ResultSet


@dataclass(frozen=True)
class ReportHead:
    """What heads a report: its intro lines (a run's, from its config, or a merge's), how the run ended,
    and its artifact manifest."""

    intro: Sequence[str]
    ended: str = "complete"  # trtbench.core.status.RunStatus: complete, interrupted, failed
    manifest: Optional[Path] = None


def write_report(out_dir: Path, results: ResultSet, head: ReportHead, sections: Sequence) -> dict[str, Path]:
    """Write every output file; ``sections`` are the scenarios' (:class:`trtbench.scenarios.base.ReportSection`:
    Markdown, and entries for results.json), in order. Returns the files' paths by kind."""
    files = {"json": out_dir / "results.json", "csv": out_dir / "results.csv", "markdown": out_dir / "report.md"}
    data = results.to_dict()
    for section in sections:
        data.update(section.json)
    atomic_write_json(files["json"], data)
    atomic_write_text(files["csv"], csv_text(results))
    atomic_write_text(files["markdown"], report_markdown(head, results, [s.markdown for s in sections]))
    if head.manifest:
        files["manifest"] = head.manifest
    return files
