"""The report's sections and the command line's summary, asked of every registered scenario in turn."""

from __future__ import annotations

from typing import Optional

from trtbench.report.section import ReportSection
from trtbench.results.resultset import ResultSet
from trtbench.scenarios import registered


def report_sections(results: ResultSet, budget_ms: Optional[float]) -> list[ReportSection]:
    """Each registered scenario's section of the report on ``results`` (those with something to say)."""
    return [section for section in (s.report(results, budget_ms) for s in registered()) if section is not None]


def summary_lines(results: ResultSet, budget_ms: Optional[float]) -> list[str]:
    """What each registered scenario recommends, for the command line."""
    return [line for scenario in registered() for line in scenario.summary(results, budget_ms)]
