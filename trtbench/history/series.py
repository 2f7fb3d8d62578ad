"""Series of the history, as plain data: each series' points in ``started_at`` order and its steps from its latest
accepted run on, with the versions changed across each; the newest point against its segment (for the gate)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Mapping, Optional, Sequence

from trtbench.analysis.change_points import THRESHOLD, Step, against, find_steps
from trtbench.history.figures import Point, RunRow, SeriesKey
from trtbench.history.store import Store, open_store


@dataclass(frozen=True)
class Series:
    """One series: its key, its points in ``started_at`` order, and its steps (each at its first point after it, an
    index into ``points``, with the versions that changed across it)."""

    key: SeriesKey
    points: tuple[Point, ...]
    steps: tuple[Step, ...]

    @property
    def latest(self) -> Optional[Point]:
        return self.points[-1] if self.points else None

    @property
    def title(self) -> str:
        return self.key.label

    @property
    def unit(self) -> str:
        return self.key.figure_name.kind.unit

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

    def worse(self, step: Step) -> bool:
        """Whether ``step`` is for the worse (slower, a lower speedup or peak, a larger error)."""
        return self.key.figure_name.kind.worse(step.change)

    def segment(self) -> list[Point]:
        """The valued points since its last step, else since its latest accepted run: the newest level."""
        start = self.steps[-1].index if self.steps else _accepted_start(self.points)
        return [p for p in self.points[start:] if p.value is not None]


def version_changes(before: Mapping[str, str], after: Mapping[str, str]) -> tuple[str, ...]:
    """``name A -> B`` for each version that differs (``-`` where one side has none)."""
    names = sorted(set(before) | set(after))
    return tuple(f"{n} {before.get(n, '-')} -> {after.get(n, '-')}" for n in names if before.get(n) != after.get(n))


def _accepted_start(points: Sequence[Point]) -> int:
    return max((i for i, p in enumerate(points) if p.run.accepted), default=0)


def since_accepted(points: Sequence[Point]) -> Sequence[Point]:
    """The points from the latest accepted run on (all where none was accepted)."""
    return points[_accepted_start(points):]


def series_steps(points: Sequence[Point], threshold: float = THRESHOLD) -> tuple[Step, ...]:
    """The steps of a series' valued points from its latest accepted run on, each at its index in ``points``."""
    at = [i for i in range(_accepted_start(points), len(points)) if points[i].value is not None]
    return tuple(replace(step, index=at[step.index], what_changed=version_changes(
        points[at[step.index - 1]].run.versions, points[at[step.index]].run.versions))
        for step in find_steps([points[i].value for i in at], threshold))


def newest_against(series: Series, threshold: float = THRESHOLD) -> Optional[Step]:
    """The newest point against the level of its segment's points before it: a step at it, with the versions changed
    since the point before, where it differs beyond noise and ``threshold``; else (or where it has no value) None."""
    segment = series.segment()
    if not segment or segment[-1] is not series.points[-1]:
        return None
    step = against([p.value for p in segment[:-1]], segment[-1].value, threshold)
    return None if step is None else replace(step, index=len(series.points) - 1, what_changed=version_changes(
        segment[-2].run.versions, segment[-1].run.versions))


@dataclass(frozen=True)
class SeriesFilter:
    """Which series to read: model (its id contains the text), variant and figure (exact), runs started at or
    after ``since`` (an ISO date or time) and up to run ``up_to`` (included); None: any."""

    model: Optional[str] = None
    variant: Optional[str] = None
    figure: Optional[str] = None
    since: Optional[str] = None
    up_to: Optional[RunRow] = None

    def keeps(self, key: SeriesKey) -> bool:
        return ((self.model is None or self.model in key.model)
                and (self.variant is None or self.variant == key.variant)
                and (self.figure is None or self.figure == key.figure))

    def admits(self, run: RunRow) -> bool:
        last = self.up_to
        return ((self.since is None or run.started_at >= self.since)
                and (last is None or (run.started_at, run.run_id) <= (last.started_at, last.run_id)))


def load_series(store: Store, keep: SeriesFilter = SeriesFilter(), threshold: float = THRESHOLD) -> list[Series]:
    """Every series ``keep`` selects, with its points in ``started_at`` order and its steps, sorted by key."""
    points: dict[SeriesKey, list[Point]] = {key: [] for key in store.series().values() if keep.keeps(key)}
    for point in store.points():
        if point.figure.key in points and keep.admits(point.run):
            points[point.figure.key].append(point)
    ordered = {key: sorted(found, key=lambda p: (p.run.started_at, p.run.run_id)) for key, found in points.items()}
    result = [Series(key, tuple(found), series_steps(found, threshold)) for key, found in ordered.items() if found]
    return sorted(result, key=lambda s: (s.key.model, s.key.variant, s.key.options, s.key.precision, s.key.point,
                                         s.key.threads, s.key.knobs, s.key.machine, s.key.figure))


def read_history(where: str, keep: SeriesFilter = SeriesFilter(), threshold: float = THRESHOLD) -> list[Series]:
    """The series of the history at ``where`` (a SQLite file or a PostgreSQL URL) as plain data."""
    with open_store(where) as store:
        return load_series(store, keep, threshold)
