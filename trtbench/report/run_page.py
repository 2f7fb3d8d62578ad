"""``report.html``: a run's (or a merge's) report as one offline page: its head, the ranked, sortable and
filterable speedup table (its data embedded as JSON), its notes, and every figure as a PNG data URI."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Sequence

from trtbench.core.env import busy_machine_note
from trtbench.core.record import Record
from trtbench.core.status import RunStatus
from trtbench.report.columns.speedup import speedup_text
from trtbench.report.html import blocks, data_script, escape, filter_box, inline, page
from trtbench.report.markdown import environment_lines
from trtbench.report.tables import csv_values, failed_part_notes, speedup_table
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


def _head(head, results: ResultSet) -> list[str]:
    """The intro, how the run ended, the environments and failures."""
    out = blocks(head.intro)
    if head.ended != RunStatus.COMPLETE:
        out.append(f'<p class="banner"><strong>{escape(head.ended)}</strong>: the results below are partial; '
                   "report.md says why.</p>")
    environments = []
    for env in results.environments.values():
        busy = busy_machine_note(env)
        environments += environment_lines(env) + ([f"  - Note: {busy}."] if busy else [])
    failed = failed_part_notes(results)
    if environments:
        out += ["<h2>Environments</h2>", *blocks(environments)]
    if failed:
        out += ["<h2>Failures</h2>", *blocks([f"- {note}" for note in failed])]
    return out


def _figure(figure: PageFigure) -> str:
    source = "data:image/png;base64," + base64.b64encode(figure.png).decode("ascii")
    return (f'<figure><img src="{source}" alt="{escape(figure.caption)}" data-path="{escape(figure.path)}">'
            f"<figcaption>{escape(figure.caption)} (<code>{escape(figure.path)}</code>)</figcaption></figure>")


def run_page(head, results: ResultSet, figures: Sequence[PageFigure]) -> str:
    """The page of ``results`` under ``head`` (a :class:`~trtbench.report.writer.ReportHead`) with ``figures``."""
    data = table_data(results)
    title = next((line[2:] for line in head.intro if line.startswith("# ")), "trtbench report")
    body = _head(head, results)
    if data["rows"]:
        body += ["<h2>Speedup</h2>",
                 "<p>Ranked by median within each point (<code>#</code> restores that order); click a header to "
                 "sort by it, again to reverse.</p>",
                 filter_box("#speedup-table tbody tr", "filter rows: words in any cell"),
                 '<div class="scroll"><table id="speedup-table" class="data"></table></div>']
        if data["notes"]:
            body += ["<ul>", *[f"<li>{inline(note)}</li>" for note in data["notes"]], "</ul>"]
    if figures:
        body += ["<h2>Figures</h2>", *[_figure(figure) for figure in figures]]
    body.append('<p>Every section in full: <a href="report.md">report.md</a>; the data: '
                '<a href="results.json">results.json</a>, <a href="results.csv">results.csv</a>.</p>')
    return page(title, "\n".join(body), data_script("table-data", data))
