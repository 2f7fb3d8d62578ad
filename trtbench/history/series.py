"""Series of the history, as plain data: each series' points in ``started_at`` order, its steps
(:func:`~trtbench.core.steps.find_steps` from its latest accepted run on), and the versions that changed across
each. :func:`load_series` (on an open store) and :func:`read_history` (on its path or URL) are what the command
line, the gate and the history's HTML page read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from trtbench.core.stats import Interval
from trtbench.core.steps import THRESHOLD, Step, find_steps
from trtbench.history.figures import RunRow, SeriesKey
from trtbench.history.store import Store, open_store

HIGHER_IS_BETTER = ("speedup", "peak_qps")  # figures that grow when things get better (the rest are times, errors)


@dataclass(frozen=True)
class SeriesPoint:
    """A run's point of a series: the run, the status, the value with its interval (None where it did not run)."""

    run: RunRow
    status: str
    value: Optional[Interval]
    reason: str


@dataclass(frozen=True)
class FoundStep:
    """A step of a series and the versions that changed across it (``torch 2.13.0 -> 2.14.1``)."""

    step: Step
    first_run: RunRow
    regression: bool
    changes: tuple[str, ...]


@dataclass(frozen=True)
class Series:
    """One series: its key, its points in ``started_at`` order, and its steps."""

    key: SeriesKey
    points: tuple[SeriesPoint, ...]
    steps: tuple[FoundStep, ...]

    @property
    def latest(self) -> Optional[SeriesPoint]:
        return self.points[-1] if self.points else None

    def trend(self, width: int = 8) -> str:
        """The last ``width`` values as a sparkline (``_`` for a point without a value)."""
        bars = "▁▂▃▄▅▆▇█"
        values = [p.value.value if p.value is not None else None for p in self.points[-width:]]
        known = [v for v in values if v is not None]
        if not known:
            return ""
        low, high = min(known), max(known)
        return "".join("_" if v is None else bars[0 if high == low else round((v - low) / (high - low) * 7)]
                       for v in values)


def worse(figure: str, change: float) -> bool:
    """Whether a relative ``change`` of ``figure`` is for the worse."""
    higher = figure.startswith(HIGHER_IS_BETTER)
    return change < 0 if higher else change > 0


def version_changes(before: dict, after: dict) -> tuple[str, ...]:
    """``name A -> B`` for each version that differs (``-`` where one side has none)."""
    names = sorted(set(before) | set(after))
    return tuple(f"{n} {before.get(n, '-')} -> {after.get(n, '-')}" for n in names if before.get(n) != after.get(n))


def since_accepted(points: list[SeriesPoint]) -> list[SeriesPoint]:
    """The points from the latest accepted run on (all where none was accepted)."""
    start = max((i for i, p in enumerate(points) if p.run.accepted), default=0)
    return points[start:]


def series_steps(key: SeriesKey, points: list[SeriesPoint], threshold: float = THRESHOLD) -> tuple[FoundStep, ...]:
    """The steps of a series' valued points, from its latest accepted run on."""
    valued = [p for p in since_accepted(points) if p.value is not None]
    found = []
    for step in find_steps([p.value for p in valued], threshold):
        before, after = valued[step.index - 1].run, valued[step.index].run
        found.append(FoundStep(step, after, worse(key.figure, step.change),
                               version_changes(before.versions, after.versions)))
    return tuple(found)


@dataclass(frozen=True)
class SeriesFilter:
    """Which series to read: model (its id contains the text), variant and figure (exact), runs started at or
    after ``since`` (an ISO date or time); None: any."""

    model: Optional[str] = None
    variant: Optional[str] = None
    figure: Optional[str] = None
    since: Optional[str] = None

    def keeps(self, key: SeriesKey) -> bool:
        return ((self.model is None or self.model in key.model)
                and (self.variant is None or self.variant == key.variant)
                and (self.figure is None or self.figure == key.figure))


def load_series(store: Store, keep: SeriesFilter = SeriesFilter(), threshold: float = THRESHOLD) -> list[Series]:
    """Every series ``keep`` selects, with its points in ``started_at`` order and its steps, sorted by key."""
    runs = {run.run_id: run for run in store.runs()}
    keys = {sid: key for sid, key in store.series().items() if keep.keeps(key)}
    points: dict[str, list[SeriesPoint]] = {sid: [] for sid in keys}
    for row in store.points():
        run = runs.get(row.run_id)
        if row.series_id in points and run is not None and (keep.since is None or run.started_at >= keep.since):
            points[row.series_id].append(SeriesPoint(run, row.status, row.value, row.reason))
    result = []
    for sid, key in keys.items():
        ordered = sorted(points[sid], key=lambda p: (p.run.started_at, p.run.run_id))
        if ordered:
            result.append(Series(key, tuple(ordered), series_steps(key, ordered, threshold)))
    return sorted(result, key=lambda s: (s.key.model, s.key.variant, s.key.options, s.key.precision, s.key.point,
                                         s.key.threads, s.key.knobs, s.key.machine, s.key.figure))


def read_history(where: str, keep: SeriesFilter = SeriesFilter(), threshold: float = THRESHOLD) -> list[Series]:
    """The series of the history at ``where`` (a SQLite file or a PostgreSQL URL) as plain data: what a page
    that draws the history reads."""
    with open_store(where) as store:
        return load_series(store, keep, threshold)
