"""Report figures (PNG), drawn without pyplot; :func:`finish` is every figure's last step."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

from matplotlib.axes import Axes
from matplotlib.container import BarContainer
from matplotlib.figure import Figure

from trtbench.core.record import Record
from trtbench.report.colors import VariantColors, hatch, legend_beside, variant_colors
from trtbench.report.section import Plot
from trtbench.results.resultset import ResultSet

DPI = 100
BAR_GROUP_WIDTH = 0.8
LABEL_HEADROOM = 0.12  # of the y range, above the tallest bar and its whisker: room for the bar's label


def label_axes(ax, xlabel: str, ylabel: str, title: str) -> None:
    """An axes' labels and title, over a light grid."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)


def finish(fig: Figure, file_name: str, legend=None, caption: Optional[str] = None) -> Plot:
    """The figure laid out, with the legend of ``legend`` (an axes) beside it: the Plot saved as ``file_name``."""
    if legend is not None:
        legend_beside(legend, fontsize="small")
    fig.tight_layout()
    return Plot.of(fig, file_name, caption)


def _series_label(record: Record, varying: set[str]) -> str:
    """The variant, with whatever else varies across the plotted records (model, precision, threads)."""
    c = record.case
    parts = ([c.model] if "model" in varying else []) + [c.label]
    parts += ([c.precision] if "precision" in varying else []) + ([f"t{c.threads}"] if "threads" in varying else [])
    return " ".join(parts)


def _grouped(results: ResultSet, value) -> tuple[list[str], dict[str, str], dict]:
    """Points (x groups), series (name -> its variant label) and {(series, point): value} of timed records."""
    ok = [r for r in results if r.timed and value(r) is not None]
    varying = {key for key, get in (("model", lambda c: c.model), ("precision", lambda c: c.precision),
                                    ("threads", lambda c: c.threads)) if len({get(r.case) for r in ok}) > 1}
    shapes = list(dict.fromkeys(f"{r.case.point}\n{r.case.shapes}" for r in ok))
    series = {_series_label(r, varying): r.case.label for r in ok}
    cells = {(_series_label(r, varying), f"{r.case.point}\n{r.case.shapes}"): value(r) for r in ok}
    return shapes, series, cells


def _finish_shape_axes(fig: Figure, ax, shapes: list[str], ylabel: str, title: str, file_name: str) -> Plot:
    """Label a bars-per-shape chart (x: input shapes), add legend and grid: the Plot saved as ``file_name``."""
    ax.set_xticks(range(len(shapes)), shapes)
    ax.set_xlabel("input shape")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    ax.margins(y=LABEL_HEADROOM)
    return finish(fig, file_name, legend=ax)


@dataclass(frozen=True)
class _SeriesBars:
    """One series' bars as drawn, and its cells (what ``cell_of`` gave for a record) at their x positions."""

    bars: BarContainer
    cells: list[tuple[float, Any]]


@dataclass(frozen=True)
class _BarChart:
    """A bars-per-shape chart as drawn: its figure and axes, the shapes along x, each series' bars."""

    fig: Figure
    ax: Axes
    shapes: list[str]
    series: list[_SeriesBars]


def _bar_chart(results: ResultSet, cell_of: Callable, height: Callable[[Any], float],
               colors: VariantColors | None) -> _BarChart | None:
    """One bar per series at each shape, ``height(cell)`` high (None without a cell)."""
    shapes, series, cells = _grouped(results, cell_of)
    if not cells:
        return None
    styles = (colors or variant_colors(results)).styles(series)
    fig = Figure(figsize=(max(6.0, 1.6 * len(shapes) * len(series) ** 0.5 + 3), 4.5))
    ax, width = fig.add_subplot(), BAR_GROUP_WIDTH / len(series)
    drawn = []
    for i, name in enumerate(series):
        offset = (i - (len(series) - 1) / 2) * width  # the series' bar within its shape's group
        got = [(x + offset, cells[(name, s)]) for x, s in enumerate(shapes) if (name, s) in cells]
        bars = ax.bar([x for x, _ in got], [height(cell) for _, cell in got], width, label=name,
                      color=styles[name][0], hatch=hatch(styles[name][1]))
        drawn.append(_SeriesBars(bars, got))
    return _BarChart(fig, ax, shapes, drawn)


def latency_plot(results: ResultSet, file_name: str, title: str = "Latency",
                 colors: VariantColors | None = None) -> Plot | None:
    """Median latency bars per point and variant, whiskers to p90 (thick) and p99 (thin)."""
    chart = _bar_chart(results, lambda r: r.stats, lambda stats: stats.median, colors)
    if chart is None:
        return None
    for drawn in chart.series:
        xs, med = [x for x, _ in drawn.cells], [stats.median for _, stats in drawn.cells]
        color = drawn.bars.patches[0].get_facecolor()
        chart.ax.errorbar(xs, med, yerr=[[0] * len(med), [stats.p99 - stats.median for _, stats in drawn.cells]],
                          fmt="none", ecolor="black", elinewidth=0.8, capsize=3)
        chart.ax.errorbar(xs, med, yerr=[[0] * len(med), [stats.p90 - stats.median for _, stats in drawn.cells]],
                          fmt="none", ecolor=tuple(0.5 * c for c in color[:3]), elinewidth=2.5)
    return _finish_shape_axes(chart.fig, chart.ax, chart.shapes, "latency (ms): median, whiskers p90 / p99", title,
                              file_name)


def speedup_plot(results: ResultSet, file_name: str, title: str = "Speedup vs eager",
                 colors: VariantColors | None = None) -> Plot | None:
    """Speedup bars per point and variant with their 95% CI, and a line at 1x."""
    chart = _bar_chart(results, results.speedup, lambda interval: interval.value, colors)
    if chart is None:
        return None
    for drawn in chart.series:
        finite = [(x, iv) for x, iv in drawn.cells if iv.low != float("-inf")]
        if finite:
            chart.ax.errorbar([x for x, _ in finite], [iv.value for _, iv in finite],
                              yerr=[[iv.value - iv.low for _, iv in finite], [iv.high - iv.value for _, iv in finite]],
                              fmt="none", ecolor="black", elinewidth=0.8, capsize=3)
        chart.ax.bar_label(drawn.bars, fmt="%.2fx", fontsize="x-small")
    chart.ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
    return _finish_shape_axes(chart.fig, chart.ax, chart.shapes, "speedup vs eager (x), 95% CI", title, file_name)


def top_layers_plot(nodes: list[dict], file_name: str, top_k: int, title: str = "Slowest layers") -> Plot | None:
    """Horizontal bars of the ``top_k`` nodes by mean time (rows of a per-layer profile)."""
    top = sorted(nodes, key=lambda n: n["mean_ms"], reverse=True)[:top_k]
    if not top:
        return None
    fig = Figure(figsize=(8.0, 1.2 + 0.3 * len(top)))
    ax = fig.add_subplot()
    labels = [f"{n['name']} ({n['type']})" for n in reversed(top)]
    bars = ax.barh(labels, [n["mean_ms"] for n in reversed(top)], color="tab:blue")
    ax.bar_label(bars, labels=[f"{n['pct']:.1f}%" for n in reversed(top)], fontsize="x-small", padding=2)
    ax.set_xlabel("mean time per run (ms); label: share of the whole interpreted run")
    ax.set_title(title)
    ax.tick_params(axis="y", labelsize="small")
    ax.margins(x=0.12)
    return finish(fig, file_name, caption="slowest layers")
