"""``trtbench gate``: whether a run regressed against its history, series by series from the latest accepted run
on: a row newly failed or skipped, or a gated figure's latest step (else the run's own point) for the worse
(docs/comparing.md, "The history and the gate").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from trtbench.core.errors import UserInputError
from trtbench.core.steps import THRESHOLD, against, find_steps
from trtbench.core.status import Status
from trtbench.history.figures import RunRow
from trtbench.history.series import (SeriesFilter, SeriesPoint, Series, load_series, since_accepted,
                                     version_changes, worse)
from trtbench.history.store import Store
from trtbench.history.text import levels_text

DEFAULT_FIGURES = ("median", "speedup")
# every figure the history keeps (trtbench.history.figures), by the first word of its name
KNOWN_FIGURES = ("median", "p99", "speedup", "accuracy", "peak_qps", "ttft", "tpot")


@dataclass(frozen=True)
class Regression:
    """One regression of the gated run: its series' label and what regressed."""

    series: str
    text: str


@dataclass(frozen=True)
class GateResult:
    """The gated run, how many of its series were checked, and each regression (exit 1 with any, else 0)."""

    run: RunRow
    checked: int
    regressions: tuple[Regression, ...]

    @property
    def exit_code(self) -> int:
        return 1 if self.regressions else 0


@dataclass(frozen=True)
class GateSettings:
    """Which figures are held to their steps, and the smallest relative change that counts."""

    figures: tuple[str, ...] = DEFAULT_FIGURES
    threshold: float = THRESHOLD

    def __post_init__(self) -> None:
        unknown = [f for f in self.figures if f not in KNOWN_FIGURES]
        if unknown:
            raise UserInputError("--figures", f"unknown figure(s): {', '.join(unknown)}",
                                 f"name some of: {', '.join(KNOWN_FIGURES)}")
        if not 0 <= self.threshold < 1:
            raise UserInputError("--threshold", f"got {self.threshold}", "give a relative change in [0, 1), e.g. 0.05")

    def gates(self, figure: str) -> bool:
        return any(figure == f or figure.startswith(f + " ") for f in self.figures)


def _status_regression(points: list[SeriesPoint], figure: str) -> Optional[str]:
    """A row that newly failed or was skipped, or an accuracy that newly fell below its tolerance."""
    if len(points) < 2 or points[-2].status != Status.OK or points[-1].status == Status.OK:
        return None
    new = points[-1]
    if figure == "accuracy" and new.status == Status.FAILED:
        return f"accuracy newly below its tolerance ({new.reason or 'failed'})"
    return f"newly {new.status}: {new.reason or 'no reason given'}"


def _value_regression(points: list[SeriesPoint], figure: str, threshold: float) -> Optional[str]:
    """The latest step at or before the run, for the worse; else the run's point against its segment."""
    valued = [p for p in points if p.value is not None]
    if not valued or valued[-1] is not points[-1]:
        return None
    steps = find_steps([p.value for p in valued], threshold)
    if steps:
        step = steps[-1]
        if not worse(figure, step.change):
            valued = valued[step.index:]
        else:
            changes = version_changes(valued[step.index - 1].run.versions, valued[step.index].run.versions)
            return (f"{step.change:+.1%} since run {valued[step.index].run.run_id} (not accepted): "
                    f"{levels_text(step.before, step.after, changes)}")
    point = against([p.value for p in valued[:-1]], valued[-1].value, threshold)
    if point is None or not worse(figure, point.change):
        return None
    changes = version_changes(valued[-2].run.versions, valued[-1].run.versions)
    return (f"{point.change:+.1%} against the {len(valued) - 1} run(s) before: "
            f"{levels_text(point.before, valued[-1].value, changes)}")


def _until(series: Series, run: RunRow) -> list[SeriesPoint]:
    """The series' points up to ``run`` (included), from the latest accepted run on."""
    return since_accepted([p for p in series.points
                           if (p.run.started_at, p.run.run_id) <= (run.started_at, run.run_id)])


def gate_run(store: Store, run_id: Optional[str] = None, settings: GateSettings = GateSettings()) -> GateResult:
    """Gate run ``run_id`` (default: the latest stored) against its series' history; bad input (exit 2) where the
    store holds no run, or none of the run's series."""
    runs = store.runs()
    if not runs:
        raise UserInputError(store.where, "the history holds no run",
                             "append runs first: run trtbench with output.history set, or trtbench history "
                             "ingest DIR...")
    run = store.find_run(run_id) if run_id is not None else runs[-1]
    checked, regressions = 0, []
    for series in load_series(store, SeriesFilter(), settings.threshold):
        points = _until(series, run)
        if not points or points[-1].run.run_id != run.run_id:
            continue
        checked += 1
        found = _status_regression(points, series.key.figure)
        if found is None and settings.gates(series.key.figure):
            found = _value_regression(points, series.key.figure, settings.threshold)
        if found is not None:
            regressions.append(Regression(series.key.label, found))
    if not checked:
        raise UserInputError(run.run_id, "the run has no series in the history",
                             "gate a run that the history holds figures of (trtbench history runs lists them)")
    return GateResult(run, checked, tuple(regressions))
