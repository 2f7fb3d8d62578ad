"""The history's page: one offline HTML file, a chart per series with hover tips (docs/outputs.md)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Mapping, Optional, Sequence

from matplotlib.figure import Figure
from matplotlib.transforms import Bbox

from trtbench.analysis.change_points import Step
from trtbench.core.stats import Interval
from trtbench.history.figures import Point
from trtbench.history.series import Series
from trtbench.history.text import interval_text
from trtbench.report.blocks import Text, code
from trtbench.report.html import render
from trtbench.report.plots import finish, label_axes
from trtbench.report.section import Plot

SIZE = (8.0, 3.0)  # a chart's width and height, inches
SPOT = 9.0  # pt: the side of a point's hover target, the width of a step's
RUN_LABELS = 10  # at most this many runs named along x


@dataclass(frozen=True)
class Spot:
    """A box on a chart that shows ``tip`` on hover: a point's (``kind`` ``pt``) or a step's (``step``), in
    fractions of the figure from its bottom left (matplotlib's figure coordinates)."""

    kind: str
    box: Bbox
    tip: str


@dataclass(frozen=True)
class Chart:
    """A series as the page shows it: its figure (None without points) and the spots on it."""

    series: Series
    plot: Optional[Plot] = None
    spots: tuple[Spot, ...] = ()

    @property
    def summary(self) -> Text:
        """Its latest value and how many steps were found."""
        last, steps = self.series.points[-1], len(self.series.steps)
        latest = _with_unit(last.value, self.series.unit)
        return ("Latest (run ", code(last.run.run_id), f"): {latest}; {steps} step{'s' if steps != 1 else ''} found.")


def _with_unit(interval: Interval, unit: str) -> str:
    return f"{interval_text(interval)} {unit}"


def _point_tip(point: Point, unit: str) -> str:
    lines = [f"run {point.run.run_id}", point.run.started_at, _with_unit(point.value, unit)]
    return "\n".join(lines + [f"{name} {version}" for name, version in sorted(point.run.versions.items())])


def _step_tip(step: Step, series: Series) -> str:
    first = series.points[step.index].run.run_id if step.index < len(series.points) else "?"
    return "\n".join([f"step at run {first} ({step.change:+.1%})", f"before {_with_unit(step.before, series.unit)}",
                      f"after {_with_unit(step.after, series.unit)}",
                      f"changed: {'; '.join(step.what_changed) or 'nothing in the environment'}"])


def _steps(ax, series: Series) -> None:
    """Each step: a dashed red line (gid ``step|<index>``), its change above the axes, and each level."""
    steps = sorted(series.steps, key=lambda step: step.index)
    for n, step in enumerate(steps):
        start = steps[n - 1].index if n else 0
        end = steps[n + 1].index - 1 if n + 1 < len(steps) else len(series.points) - 1
        for level, first, last in ((step.before, start, step.index - 1), (step.after, step.index, end)):
            ax.plot([first, last], [level.value] * 2, color="0.35", linewidth=1, linestyle=(0, (4, 3)), zorder=1.5)
        ax.axvline(step.index - 0.5, color="tab:red", linewidth=1.5, linestyle="--", gid=f"step|{step.index}")
        ax.annotate(f"{step.change:+.1%}", (step.index - 0.5, 1), xycoords=("data", "axes fraction"),
                    xytext=(3, 2), textcoords="offset points", color="tab:red", fontsize="small")


def _spots(fig: Figure, ax, series: Series) -> tuple[Spot, ...]:
    """Each point's and each step's spot, where the laid-out axes draw them."""
    side, to_figure = SPOT * fig.dpi / 72, fig.transFigure.inverted()
    centres = ax.transData.transform([(index, point.value.value) for index, point in enumerate(series.points)])
    spots = [Spot("pt", Bbox.from_bounds(x - side / 2, y - side / 2, side, side).transformed(to_figure),
                  _point_tip(point, series.unit)) for (x, y), point in zip(centres, series.points)]
    for step in series.steps:
        x = ax.transData.transform((step.index - 0.5, 0))[0]
        box = Bbox.from_extents(x - side / 2, ax.bbox.y0, x + side / 2, ax.bbox.y1)
        spots.append(Spot("step", box.transformed(to_figure), _step_tip(step, series)))
    return tuple(spots)


def history_chart(series: Series, file_name: str) -> Chart:
    """The series' chart: each point's value (gid ``value|<title>``) over its band, the steps; and its spots."""
    if not series.points:
        return Chart(series)
    fig = Figure(figsize=SIZE)
    ax = fig.add_subplot()
    xs = range(len(series.points))
    values = [point.value for point in series.points]  # its band: each bound that is not finite at the value
    ax.fill_between(xs, [v.low if math.isfinite(v.low) else v.value for v in values],
                    [v.high if math.isfinite(v.high) else v.value for v in values], color="tab:blue", alpha=0.18,
                    linewidth=0)
    ax.plot(xs, [v.value for v in values], "o-", color="tab:blue", markersize=4, linewidth=1.5,
            gid=f"value|{series.title}")
    _steps(ax, series)
    every = max(1, math.ceil(len(xs) / RUN_LABELS))
    named = [i for i in xs if i % every == 0 or i == len(xs) - 1]
    ax.set_xticks(named, [series.points[i].run.run_id[:10] for i in named], fontsize="small")
    ax.set_xlim(-0.5, len(xs) - 0.5)
    ax.ticklabel_format(axis="y", useOffset=False)
    label_axes(ax, "run", series.unit, "")
    return Chart(series, finish(fig, file_name, caption=series.title), _spots(fig, ax, series))


def history_page(charts: Sequence[Chart], pngs: Mapping[object, bytes], title: str = "trtbench history") -> str:
    """The page: each chart (its PNG bytes in ``pngs`` by plot path), in order, under a filter over their titles."""
    return render("history.html.j2", title=title, charts=charts, pngs=pngs)


def from_history(found: Sequence[Series]) -> list[Series]:
    """The history's series as the page draws them: each point with a value, and each step."""
    pages = []
    for series in found:
        drawn = tuple(p for p in series.points if p.value is not None)
        at = {p.run.run_id: i for i, p in enumerate(drawn)}
        steps = tuple(replace(s, index=at[series.points[s.index].run.run_id]) for s in series.steps)
        pages.append(replace(series, points=drawn, steps=steps))
    return pages
