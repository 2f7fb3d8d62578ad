"""The history's page: one offline HTML file with a chart per series (each point's value and its interval as a
band, the steps found marked with their levels before and after, each point's environment on hover), drawn as
inline SVG here and filterable by the series' titles. It takes plain data (:class:`HistorySeries`);
:func:`from_history` makes it from the history's series (:mod:`trtbench.history.series`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Mapping, Sequence

from matplotlib.ticker import MaxNLocator

from trtbench.analysis.change_points import Step
from trtbench.core.stats import Interval
from trtbench.history.series import Series
from trtbench.history.text import interval_text
from trtbench.report.html import escape, filter_box, page

WIDTH, HEIGHT = 760, 260
# the plot area's margins in the chart, px
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 24, 40
# at most this many y ticks, at round values
Y_TICKS = 5
# px: the width a step's hover target spans
STEP_HIT = 12


@dataclass(frozen=True)
class HistoryPoint:
    """One run's figure in a series: the run, when it started, the value with its 95% interval, and the
    environment it ran in (name -> version)."""

    run_id: str
    started_at: str
    value: float
    low: float
    high: float
    environment: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class HistorySeries:
    """One figure under one key: its ``title`` (the key in words), its ``unit``, its points in order of their
    start, and the steps found in it (each at its first point after it, an index into ``points``)."""

    title: str
    unit: str
    points: tuple[HistoryPoint, ...]
    steps: tuple[Step, ...] = ()


@dataclass(frozen=True)
class _Frame:
    """A chart's scales: point ``count`` along x, ``low`` to ``high`` along y, with its y ``ticks``."""

    count: int
    low: float
    high: float
    ticks: tuple[float, ...]

    def x(self, index: float) -> float:
        span = WIDTH - LEFT - RIGHT
        return LEFT + (span / 2 if self.count < 2 else span * index / (self.count - 1))

    def y(self, value: float) -> float:
        return TOP + (HEIGHT - TOP - BOTTOM) * (self.high - value) / (self.high - self.low)


def _number(value: float) -> str:
    return f"{value:.4g}"


def _with_unit(interval: Interval, unit: str) -> str:
    return f"{interval_text(interval)} {unit}"


def _bounds(point: HistoryPoint) -> tuple[float, float]:
    """The point's interval, each bound that is not finite at the value."""
    low, high = (bound if math.isfinite(bound) else point.value for bound in (point.low, point.high))
    return low, high


def _frame(series: HistorySeries) -> _Frame:
    """The series' scales: y from a round tick below its lowest bound to one above its highest."""
    values = [v for point in series.points for v in _bounds(point)]
    values += [v for step in series.steps for v in (step.before.value, step.after.value)]
    low, high = min(values), max(values)
    if low == high:
        low, high = low - (abs(low) * 0.05 or 1.0), high + (abs(high) * 0.05 or 1.0)
    pad = (high - low) * 0.05
    ticks = MaxNLocator(Y_TICKS).tick_values(low - pad, high + pad)
    return _Frame(len(series.points), float(ticks[0]), float(ticks[-1]), tuple(float(t) for t in ticks))


def _point_tip(point: HistoryPoint, unit: str) -> str:
    lines = [f"run {point.run_id}", point.started_at,
             _with_unit(Interval(point.value, point.low, point.high), unit)]
    return "\n".join(lines + [f"{name} {version}" for name, version in sorted(point.environment.items())])


def _step_tip(step: Step, series: HistorySeries) -> str:
    first = series.points[step.index].run_id if step.index < len(series.points) else "?"
    return "\n".join([f"step at run {first} ({step.change:+.1%})", f"before {_with_unit(step.before, series.unit)}",
                      f"after {_with_unit(step.after, series.unit)}",
                      f"changed: {'; '.join(step.what_changed) or 'nothing in the environment'}"])


def _axes(frame: _Frame, series: HistorySeries) -> list[str]:
    out = [f'<line class="axis" x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{HEIGHT - BOTTOM}"/>',
           f'<line class="axis" x1="{LEFT}" y1="{HEIGHT - BOTTOM}" x2="{WIDTH - RIGHT}" y2="{HEIGHT - BOTTOM}"/>']
    for value in frame.ticks:
        out.append(f'<text x="{LEFT - 6}" y="{frame.y(value) + 4:.1f}" text-anchor="end">{_number(value)}</text>')
    every = max(1, math.ceil(len(series.points) / 10))
    for index, point in enumerate(series.points):
        if index % every == 0 or index == len(series.points) - 1:
            out.append(f'<text x="{frame.x(index):.1f}" y="{HEIGHT - BOTTOM + 16}" text-anchor="middle">'
                       f"{escape(point.run_id[:10])}</text>")
    out.append(f'<text x="14" y="{TOP + (HEIGHT - TOP - BOTTOM) / 2}" text-anchor="middle" '
               f'transform="rotate(-90 14 {TOP + (HEIGHT - TOP - BOTTOM) / 2})">{escape(series.unit)}</text>')
    return out


def _steps(frame: _Frame, series: HistorySeries) -> list[str]:
    """Each step: a dashed line between its last point before and first after, and each level over its points."""
    out = []
    steps = sorted(series.steps, key=lambda step: step.index)
    for n, step in enumerate(steps):
        start = steps[n - 1].index if n else 0
        end = steps[n + 1].index - 1 if n + 1 < len(steps) else len(series.points) - 1
        x = frame.x(step.index - 0.5)
        for level, first, last in ((step.before, start, step.index - 1), (step.after, step.index, end)):
            out.append(f'<line class="level" x1="{frame.x(first):.1f}" y1="{frame.y(level.value):.1f}" '
                       f'x2="{frame.x(last):.1f}" y2="{frame.y(level.value):.1f}"/>')
        out.append(f'<line class="step" x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{HEIGHT - BOTTOM}"/>')
        # the step's hover target: a transparent strip wider than its line
        out.append(f'<rect class="stephit" x="{x - STEP_HIT / 2:.1f}" y="{TOP}" width="{STEP_HIT}" '
                   f'height="{HEIGHT - TOP - BOTTOM}" tabindex="0" data-tip="{escape(_step_tip(step, series))}"/>')
        out.append(f'<text class="steplabel" x="{x + 4:.1f}" y="{TOP - 8}">{step.change:+.1%}</text>')
    return out


def chart(series: HistorySeries) -> str:
    """The series' chart as inline SVG."""
    if not series.points:
        return "<p>No points.</p>"
    frame = _frame(series)
    coords = [(frame.x(i), point) for i, point in enumerate(series.points)]
    band = [f"{x:.1f},{frame.y(_bounds(p)[1]):.1f}" for x, p in coords]
    band += [f"{x:.1f},{frame.y(_bounds(p)[0]):.1f}" for x, p in reversed(coords)]
    out = [f'<svg class="chart" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
           f'aria-label="{escape(series.title)}" xmlns="http://www.w3.org/2000/svg">',
           *_axes(frame, series), f'<polygon class="band" points="{" ".join(band)}"/>',
           f'<polyline class="line" points="{" ".join(f"{x:.1f},{frame.y(p.value):.1f}" for x, p in coords)}"/>',
           *_steps(frame, series)]
    out += [f'<circle class="pt" cx="{x:.1f}" cy="{frame.y(p.value):.1f}" r="4" tabindex="0" '
            f'data-tip="{escape(_point_tip(p, series.unit))}"/>' for x, p in coords]
    return "\n".join(out + ["</svg>"])


def _summary(series: HistorySeries) -> str:
    if not series.points:
        return ""
    last = series.points[-1]
    steps = len(series.steps)
    return (f"<p>Latest (run <code>{escape(last.run_id)}</code>): "
            f"{escape(_with_unit(Interval(last.value, last.low, last.high), series.unit))}; "
            f"{steps} step{'s' if steps != 1 else ''} found.</p>")


def history_page(series: Sequence[HistorySeries], title: str = "trtbench history") -> str:
    """The page: a chart per series, in the order given, under a filter over their titles."""
    body = [f"<h1>{escape(title)}</h1>",
            "<p>Each point is a run's value with its 95% interval (the band); a dashed red line marks a step found, "
            "with the levels before and after it; hover over a point for its run and environment, over a step "
            "for what changed.</p>"]
    if not series:
        body.append("<p>No series.</p>")
    else:
        body.append(filter_box("section.series", "filter series: words in their titles"))
    for one in series:
        body += [f'<section class="series" data-search="{escape(one.title)}">', f"<h2>{escape(one.title)}</h2>",
                 _summary(one), chart(one), "</section>"]
    return page(title, "\n".join(body))


def from_history(found: Sequence[Series]) -> list[HistorySeries]:
    """The history's series as the page draws them: each point that has a value (a failed or skipped run's has
    none), with its run's versions on hover, and each step at its first run after it."""
    pages = []
    for series in found:
        drawn = [p for p in series.points if p.value is not None]
        points = tuple(HistoryPoint(p.run.run_id, p.run.started_at, p.value.value, p.value.low, p.value.high,
                                    {k: str(v) for k, v in p.run.versions.items()}) for p in drawn)
        at = {p.run.run_id: i for i, p in enumerate(drawn)}
        steps = tuple(replace(s, index=at[series.points[s.index].run.run_id]) for s in series.steps)
        pages.append(HistorySeries(series.key.label, series.key.figure_name.kind.unit, points, steps))
    return pages
