"""``report.html`` (``templates/run.html.j2``): a run's (or a merge's) report as one offline page."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from trtbench.core.record import Record
from trtbench.report.columns.speedup import speedup_text
from trtbench.report.blocks import Block
from trtbench.report.html import plain, render
from trtbench.report.markdown import ended_blocks, environment_list, failure_blocks
from trtbench.report.tables import csv_values, speedup_table
from trtbench.results.resultset import ResultSet


@dataclass(frozen=True)
class PageFigure:
    """A figure as the page shows it: its ``caption``, its ``path`` in the output folder and its PNG bytes."""

    caption: str
    path: str
    png: bytes


def regimes_text(results: ResultSet, record: Record) -> str:
    """A row's regimes: ``one regime``, or its speedup in each (``rounds 0-24: 1.03x [1.01-1.05]; ...``)."""
    if not record.timed:
        return ""
    regimes, speedups = results.analysis.regimes(record), results.analysis.regime_speedups(record)
    if len(regimes) < 2:
        return "one regime"
    if not speedups:
        return f"{len(regimes)} regimes"
    text = "; ".join(f"rounds {regime.start}-{regime.end}: {speedup_text(speedup) or 'none'}"
                     for regime, speedup in zip(regimes, speedups))
    return text + (" (regime-dependent)" if results.analysis.regime_dependent(record) else "")


def table_data(results: ResultSet) -> dict:
    """The table as the page's JSON: its columns, and per row (ranked) its status, cells and results.csv fields."""
    table = speedup_table(results)
    at = table.columns.index("status") + 1
    rows = [{"status": str(row.record.status), "values": csv_values(row),
             "cells": [str(rank), *cells[:at], row.record.reason or "", *cells[at:], regimes_text(results, row.record)]}
            for rank, (row, cells) in enumerate(zip(table.rows, table.cells), 1)]
    return {"columns": ["#", *table.columns[:at], "reason", *table.columns[at:], "regimes"], "rows": rows,
            "notes": table.notes}


def run_page(head, results: ResultSet, figures: Sequence[PageFigure], summary: Sequence[Block] = ()) -> str:
    """The page of ``results`` under ``head`` with ``figures``, the scenarios' ``summary`` on top."""
    title = next((block.text for block in head.intro if getattr(block, "level", 0) == 1), "trtbench report")
    return render("run.html.j2", title=title, intro=head.intro, summary=summary, ended=ended_blocks(head.ended),
                  environments=environment_list(results), failures=failure_blocks(results),
                  table=plain(table_data(results)), figures=figures)
