"""``trtbench gate``: whether a run regressed against its history, series by series: a row newly failed or skipped, or
a gated figure's latest step (else its own point) for the worse (docs/comparing.md, "The history and the gate")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

from trtbench.analysis.change_points import THRESHOLD
from trtbench.core.errors import UserInputError
from trtbench.core.status import Status
from trtbench.history.figures import FigureKind, Point, RunRow
from trtbench.history.series import SeriesFilter, Series, load_series, newest_against, since_accepted
from trtbench.history.store import Store
from trtbench.history.text import levels_text

DEFAULT_FIGURES = (FigureKind.MEDIAN.value, FigureKind.SPEEDUP.value)


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
        known = [kind.value for kind in FigureKind]
        unknown = [f for f in self.figures if f not in known]
        if unknown:
            raise UserInputError("--figures", f"unknown figure(s): {', '.join(unknown)}",
                                 f"name some of: {', '.join(known)}")
        if not 0 <= self.threshold < 1:
            raise UserInputError("--threshold", f"got {self.threshold}", "give a relative change in [0, 1), e.g. 0.05")

    def gates(self, kind: FigureKind) -> bool:
        return kind.value in self.figures


def _status_regression(points: Sequence[Point], kind: FigureKind) -> Optional[str]:
    """A row that newly failed or was skipped, or an accuracy that newly fell below its tolerance."""
    if len(points) < 2 or points[-2].figure.status != Status.OK or points[-1].figure.status == Status.OK:
        return None
    new = points[-1].figure
    if kind is FigureKind.ACCURACY and new.status == Status.FAILED:
        return f"accuracy newly below its tolerance ({new.reason or 'failed'})"
    return f"newly {new.status}: {new.reason or 'no reason given'}"


def _value_regression(series: Series, threshold: float) -> Optional[str]:
    """The series' latest step, for the worse; else its newest point against its segment (``series`` ends at the
    gated run)."""
    if series.latest.value is None:
        return None
    if series.steps and series.worse(series.steps[-1]):
        step = series.steps[-1]
        return (f"{step.change:+.1%} since run {series.points[step.index].run.run_id} (not accepted): "
                f"{levels_text(step.before, step.after, step.what_changed)}")
    point = newest_against(series, threshold)
    if point is None or not series.worse(point):
        return None
    return (f"{point.change:+.1%} against the {len(series.segment()) - 1} run(s) before: "
            f"{levels_text(point.before, series.latest.value, point.what_changed)}")


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
    for series in load_series(store, SeriesFilter(up_to=run), settings.threshold):
        if series.latest.run.run_id != run.run_id:
            continue
        checked += 1
        kind = series.key.figure_name.kind
        found = _status_regression(since_accepted(series.points), kind)
        if found is None and settings.gates(kind):
            found = _value_regression(series, settings.threshold)
        if found is not None:
            regressions.append(Regression(series.key.label, found))
    if not checked:
        raise UserInputError(run.run_id, "the run has no series in the history",
                             "gate a run that the history holds figures of (trtbench history runs lists them)")
    return GateResult(run, checked, tuple(regressions))
