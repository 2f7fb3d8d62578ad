"""Sweep reports: latency and throughput against batch size, and the p99-throughput Pareto front."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Optional

from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from trtbench.core.case import shapes_text
from trtbench.core.env import environment_name
from trtbench.results.recommend import eligible
from trtbench.core.record import Record
from trtbench.report.colors import VariantColors, marker, variant_colors
from trtbench.report.plots import finish, label_axes
from trtbench.report.rows import grouped
from trtbench.report.section import Plot
from trtbench.results.resultset import ResultSet


def measured(results: ResultSet) -> list[Record]:
    return [r for r in results if eligible(r)]


def is_sweep(results: ResultSet) -> bool:
    """True when the measured points span more than one batch size."""
    return len({r.case.batch for r in measured(results)}) > 1


def _labeller(records: list[Record], environments: dict) -> Callable[[Record], str]:
    """A series name: the variant, plus each of model, precision, threads, input dims, environment that varies."""
    dims = [lambda r: r.case.model, lambda r: r.case.label, lambda r: r.case.precision,
            lambda r: f"t{r.case.threads}", lambda r: shapes_text(tuple(s[1:] for s in r.case.input_shapes)),
            lambda r: environment_name(environments.get(r.environment, {"id": r.environment}))]
    shown = [get for i, get in enumerate(dims) if i == 1 or len({get(r) for r in records}) > 1]
    return lambda r: " ".join(get(r) for get in shown)


def _series(results: ResultSet) -> dict[str, list[Record]]:
    """Measured records by series name, each series sorted by batch size."""
    records = measured(results)
    series = grouped(records, _labeller(records, results.environments))
    return {name: sorted(rs, key=lambda r: r.case.batch) for name, rs in series.items()}


def _styles(series: dict[str, list[Record]], colors: VariantColors | None, results: ResultSet) -> dict:
    """Per series: its variant's colour and its marker."""
    styles = (colors or variant_colors(results)).styles({name: rs[0].case.label for name, rs in series.items()})
    return {name: (color, marker(rank)) for name, (color, rank) in styles.items()}


def pareto_front(points: Sequence[tuple[float, float]]) -> list[bool]:
    """For (latency, throughput) pairs: True where no other point is at least as good on both, better on one."""
    def beaten(p):
        return any(q[0] <= p[0] and q[1] >= p[1] and (q[0] < p[0] or q[1] > p[1]) for q in points)
    return [not beaten(p) for p in points]


def fronts(results: ResultSet) -> dict[tuple[str, str], list[Record]]:
    """Per (environment, model): the measured points on the p99-throughput Pareto front, by p99."""
    out = {}
    for key, records in grouped(measured(results), lambda r: (r.environment, r.case.model)).items():
        on_front = pareto_front([(r.stats.p99, r.throughput) for r in records])
        out[key] = sorted((r for r, keep in zip(records, on_front) if keep), key=lambda r: r.stats.p99)
    return out


PLAIN = FuncFormatter(lambda value, _: f"{value:g}")  # 60, not 6x10^1, on log axes


def _plain_log(axis) -> None:
    axis.set_major_formatter(PLAIN)
    axis.set_minor_formatter(PLAIN)


def _batch_axes(series: dict[str, list[Record]], ylabel: str, title: str):
    fig = Figure(figsize=(8.0, 4.8))
    ax = fig.add_subplot()
    batches = sorted({r.case.batch for rs in series.values() for r in rs})
    ax.set_xscale("log", base=2)
    ax.set_xticks(batches, [str(b) for b in batches])
    ax.minorticks_off()
    label_axes(ax, "batch size", ylabel, title)
    return fig, ax


def latency_vs_batch_plot(results: ResultSet, file_name: str, p99_budget_ms: Optional[float] = None,
                          colors: VariantColors | None = None) -> Plot | None:
    """Median (solid) and p99 (dashed) latency against batch size, and the budget line."""
    if not is_sweep(results):
        return None
    series = _series(results)
    styles = _styles(series, colors, results)
    fig, ax = _batch_axes(series, "latency (ms, log scale): median solid, p99 dashed", "Latency vs batch size")
    ax.set_yscale("log")
    _plain_log(ax.yaxis)
    for name, records in series.items():
        xs = [r.case.batch for r in records]
        color, shape = styles[name]
        ax.plot(xs, [r.stats.median for r in records], marker=shape, color=color, label=name, gid=f"median|{name}")
        ax.plot(xs, [r.stats.p99 for r in records], linestyle="--", marker=".", color=color, gid=f"p99|{name}")
    if p99_budget_ms is not None:
        ax.axhline(p99_budget_ms, color="red", linewidth=1, linestyle=":", label=f"p99 budget {p99_budget_ms:g} ms",
                   gid="budget")
    return finish(fig, file_name, legend=ax)


def throughput_vs_batch_plot(results: ResultSet, file_name: str, colors: VariantColors | None = None) -> Plot | None:
    """Throughput (samples/s at the median latency) against batch size, one line per series."""
    if not is_sweep(results):
        return None
    series = _series(results)
    styles = _styles(series, colors, results)
    fig, ax = _batch_axes(series, "throughput (samples/s)", "Throughput vs batch size")
    for name, records in series.items():
        color, shape = styles[name]
        ax.plot([r.case.batch for r in records], [r.throughput for r in records], marker=shape, color=color,
                label=name, gid=f"throughput|{name}")
    return finish(fig, file_name, legend=ax)


def pareto_plot(results: ResultSet, file_name: str, p99_budget_ms: Optional[float] = None,
                colors: VariantColors | None = None) -> Plot | None:
    """Throughput against p99 latency of every point, each environment and model's Pareto front, the budget line."""
    series = _series(results)
    if not series:
        return None
    styles = _styles(series, colors, results)
    fig = Figure(figsize=(8.0, 5.2))
    ax = fig.add_subplot()
    for name, records in series.items():
        color, shape = styles[name]
        ax.scatter([r.stats.p99 for r in records], [r.throughput for r in records], label=name, gid=f"points|{name}",
                   s=24, zorder=3, color=color, marker=shape)
        for r in records:
            ax.annotate(f"b{r.case.batch}", (r.stats.p99, r.throughput), fontsize="x-small",
                        textcoords="offset points", xytext=(3, 3))
    groups = fronts(results)
    for (environment, model), front in groups.items():
        where = environment_name(results.environments.get(environment, {"id": environment}))
        name = "Pareto front" + (f" ({model}, {where})" if len(groups) > 1 else "")
        ax.plot([r.stats.p99 for r in front], [r.throughput for r in front], color="black", linewidth=1,
                drawstyle="steps-post", marker="o", markerfacecolor="none", markersize=10, label=name,
                gid=f"front|{model}|{environment}")
    if p99_budget_ms is not None:
        ax.axvline(p99_budget_ms, color="red", linewidth=1, linestyle=":", label=f"p99 budget {p99_budget_ms:g} ms",
                   gid="budget")
    ax.set_xscale("log")
    _plain_log(ax.xaxis)
    label_axes(ax, "p99 latency (ms, log scale)", "throughput (samples/s)",
               "Latency-throughput: ringed points are on the Pareto front")
    return finish(fig, file_name, legend=ax)


def sweep_plots(results: ResultSet, p99_budget_ms: Optional[float] = None,
                colors: VariantColors | None = None) -> list[Plot]:
    """The three sweep figures (none unless the records span several batch sizes)."""
    if not is_sweep(results):
        return []
    return [latency_vs_batch_plot(results, "latency_vs_batch.png", p99_budget_ms, colors),
            throughput_vs_batch_plot(results, "throughput_vs_batch.png", colors),
            pareto_plot(results, "pareto.png", p99_budget_ms, colors)]


def sweep_markdown(results: ResultSet, plots: Sequence[Plot]) -> str:
    """The report's sweep section: the figures and, per environment and model, the points on the front."""
    lines = ["## Sweep", "",
             "Measured points that ran ok and passed their accuracy check. Throughput is samples/s at the median "
             "latency. A point is on the Pareto front when no other point of the same model in the same environment "
             "has both a lower p99 and a higher throughput.", ""]
    lines += [plot.markdown for plot in plots] + [""]
    for (environment, model), front in fronts(results).items():
        where = environment_name(results.environments.get(environment, {"id": environment}))
        points = "; ".join(f"{r.case.label} {r.case.precision} b{r.case.batch} t{r.case.threads} "
                           f"(p99 {r.stats.p99:.3f} ms, {r.throughput:.1f}/s)" for r in front)
        lines.append(f"- Pareto front, {model} on {where}: {points}")
    return "\n".join(lines) + "\n"
