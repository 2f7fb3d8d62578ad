"""Every plot of a run's report draws a variant in one colour, and no legend covers a label; the report's figures
come as data, and the writer alone saves them; the history page's chart draws each run where its hover spot is."""

from __future__ import annotations

import ast
import io

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_rgba
from matplotlib.container import BarContainer, ErrorbarContainer
from matplotlib.figure import Figure
from matplotlib.image import imread

from helpers.history import drawn_series
from helpers.serving import SUMMARY_INVALID
from trtbench.core.case import Case
from trtbench.core.record import Record
from trtbench.pipeline.sections import report_sections
from trtbench.analysis.change_points import Step
from trtbench.core.stats import Interval
from trtbench.report.blocks import Heading
from trtbench.report.history_page import history_chart
from trtbench.report.writer import ReportHead, png_files, write_report
from trtbench.results.resultset import ResultSet
from trtbench.scenarios.serving.loadgen.summary import parse_summary
from trtbench.scenarios.serving.vision.result import LoadGenRun, ServedCase, ServingResult
from helpers.paths import REPO

VARIANTS = ("eager", "traced", "ort")
MEDIANS = {"eager": 10.0, "traced": 7.5, "ort": 6.6}  # ms at batch 1; ort at 1.52x eager


def record(variant: str, batch: int, precision: str = "fp32") -> Record:
    case = Case(model="m", variant=variant, precision=precision, point=f"b{batch}", input_shapes=((batch, 3, 8, 8),),
                threads=2, device="cpu")
    median = MEDIANS[variant] * batch ** 0.8 * (0.7 if precision == "int8" else 1.0)
    parity = {"ok": True, "max_abs_err": 0.0, **({"sqnr_db": 30.0 + batch} if precision == "int8" else {})}
    return Record(case=case, environment="env", rounds=[[median * f for f in (0.98, 1.0, 1.03)]] * 4, accuracy=parity)


def served(r: Record) -> ServedCase:
    summary = parse_summary(SUMMARY_INVALID)
    runs = tuple(LoadGenRun(qps, 0, summary, True, (10.0,), {1: 1}, 0, f"serving/x/r0-s{i}")
                 for i, qps in enumerate((40.0, 60.0)))
    result = ServingResult(loadgen_scenario="server", workers=1, threads=2, bound_ms=40.0, percentile=0.99,
                           peaks=(60.0,),
                           runs=runs, log_dir="serving/x")
    return ServedCase(r.case.key, r.environment, (result,))


def a_run() -> ResultSet:
    """Three variants at batch 1, 2 and 4 (a sweep), ort at int8 too, eager and ort served."""
    results = ResultSet(environments={"env": {"id": "env"}})
    for batch in (1, 2, 4):
        for variant in VARIANTS:
            results.add(record(variant, batch))
        results.add(record("ort", batch, "int8"))
    for r in results:
        if r.case.variant in ("eager", "ort") and r.case.batch == 1:
            results.add(served(r))
    return results


def on_canvas(fig):
    """``fig`` drawn on an Agg canvas, as the writer draws it."""
    FigureCanvasAgg(fig).draw()
    return fig


@pytest.fixture
def drawn() -> dict:
    """The report's figures by file name, as its sections carry them to the writer."""
    return {plot.file_name: on_canvas(plot.figure) for section in report_sections(a_run(), 50.0)
            for plot in section.plots}


def handle_color(handle):
    if isinstance(handle, BarContainer):
        return to_rgba(handle.patches[0].get_facecolor())
    if isinstance(handle, ErrorbarContainer):
        return to_rgba(handle.lines[0].get_color())
    if hasattr(handle, "get_offsets"):  # a scatter's PathCollection
        return to_rgba(handle.get_facecolor()[0])
    return to_rgba(handle.get_color())


def test_each_variant_has_one_colour_in_every_plot_of_the_report(drawn):
    assert {"latency.png", "speedup.png", "latency_vs_batch.png", "throughput_vs_batch.png", "pareto.png",
            "int8_speed_accuracy.png", "serving.png"} <= set(drawn)
    colours: dict[str, set] = {}
    seen_in: dict[str, set] = {}
    for name, fig in drawn.items():
        for ax in fig.axes:
            for handle, label in zip(*ax.get_legend_handles_labels()):
                variant = label.split()[0]
                if variant in VARIANTS:
                    colours.setdefault(variant, set()).add(handle_color(handle))
                    seen_in.setdefault(variant, set()).add(name)
    assert set(colours) == set(VARIANTS)
    assert "speedup.png" not in seen_in["eager"] and "speedup.png" in seen_in["ort"]  # eager is the baseline
    for variant, found in colours.items():
        assert len(found) == 1, f"{variant} is drawn in {len(found)} colours across {sorted(seen_in[variant])}"
    assert len({next(iter(found)) for found in colours.values()}) == len(VARIANTS)


def test_series_of_one_variant_differ_by_hatch_or_marker(drawn):
    """ort fp32 and ort int8 share ort's colour; their bars differ by hatch, their lines by marker."""
    (ax,) = drawn["latency.png"].axes
    hatches = {label: handle.patches[0].get_hatch() for handle, label in zip(*ax.get_legend_handles_labels())}
    assert hatches["ort fp32"] != hatches["ort int8"]
    (ax,) = drawn["latency_vs_batch.png"].axes
    markers = {line.get_label(): line.get_marker() for line in ax.get_lines() if line.get_label().startswith("ort")}
    assert markers["ort fp32"] != markers["ort int8"]


def speedups(by_variant: dict[str, float]) -> ResultSet:
    """eager and each variant at ``by_variant``'s speedup, at two points."""
    results = ResultSet(environments={"env": {"id": "env"}})
    for point, batch in (("min", 1), ("opt", 2)):
        for variant, speedup in {"eager": 1.0, **by_variant}.items():
            case = Case(model="m", variant=variant, precision="fp32", point=point, input_shapes=((batch, 3, 8, 8),),
                        threads=2, device="cpu")
            results.add(Record(case=case, environment="env",
                               rounds=[[10.0 / speedup * f for f in (0.98, 1.0, 1.03)]] * 4))
    return results


def test_no_legend_covers_a_label(drawn):
    """The speedup plot's bar labels ("1.52x") and every other text drawn in the axes stay clear of the legend:
    in the report's plots, and in a speedup plot whose legend, placed in the axes, covered the "1.35x" label."""
    import trtbench.report.plots as plots

    figures = {**drawn, "crowded": on_canvas(plots.speedup_plot(speedups({"traced": 1.35, "ort": 1.52}),
                                                                  "crowded.png").figure)}
    assert {"1.35x", "1.52x"} <= {text.get_text() for text in figures["crowded"].axes[0].texts}
    covered, inside = [], []
    for name, fig in figures.items():
        renderer = fig.canvas.get_renderer()
        for ax in fig.axes:
            legend = ax.get_legend()
            if legend is None:
                continue
            box = legend.get_window_extent(renderer)
            covered += [(name, text.get_text()) for text in ax.texts if box.overlaps(text.get_window_extent(renderer))]
            if box.x0 < ax.get_window_extent(renderer).x1:
                inside.append(name)
    assert covered == [], "labels under a legend"
    assert inside == [], "legends drawn over the axes (beside them, they cover no bar, line or label)"



def test_a_scenario_report_writes_no_file_and_the_writer_saves_each_figure_it_carries(monkeypatch, tmp_path):
    """Asked for its section, no scenario saves a figure or writes a file (the working folder stays empty); the
    writer saves each figure a section carries, at the path its Markdown names, and closes it."""
    saved = []
    savefig = Figure.savefig
    monkeypatch.setattr(Figure, "savefig", lambda fig, *args, **kw: (saved.append(args), savefig(fig, *args, **kw)))
    monkeypatch.chdir(tmp_path)
    results = a_run()
    sections = report_sections(results, 50.0)
    plots = [plot for section in sections for plot in section.plots]
    assert saved == [] and list(tmp_path.iterdir()) == []
    assert {"latency.png", "speedup.png", "pareto.png", "int8_speed_accuracy.png", "serving.png"} <= {
        plot.file_name for plot in plots}

    files = write_report(tmp_path / "out", results, ReportHead([Heading(1, "a run")]), sections)
    report = files["markdown"].read_text()
    assert len(saved) == len(plots)
    assert sorted(path.name for path in (tmp_path / "out" / "plots").iterdir()) == sorted(p.file_name for p in plots)
    for plot in plots:
        assert f"]({plot.path})" in report and imread(tmp_path / "out" / plot.path).shape[0] > 0
        assert plot.figure.axes == [], f"{plot.file_name} left open"


def test_only_the_writer_saves_a_report_file():
    """No report module but the writer, and no scenario's report module, imports the atomic file writes or saves a
    figure: ``out_dir`` stops at the writer."""
    package = REPO / "trtbench"
    modules = [p for p in (package / "report").rglob("*.py") if p.name != "writer.py"]
    modules += [p for p in (package / "scenarios").rglob("*.py") if "report" in p.name]
    assert len(modules) > 10
    for path in modules:
        tree = ast.parse(path.read_text())
        imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        called = {node.func.attr for node in ast.walk(tree) if isinstance(node, ast.Call)
                  and isinstance(node.func, ast.Attribute)}
        assert "trtbench.core.fsutil" not in imported and "savefig" not in called, path


def test_the_history_chart_draws_each_run_its_band_and_steps_and_each_spot_sits_on_its_point():
    """The history page's chart: each run's value, its interval as a band, a step's line between its runs; in the
    PNG the page shows, each point's hover spot is centred on the point's marker."""
    values = (10.0, 10.0, 10.0, 11.5, 11.5)
    step = Step(3, Interval(10.0, 9.9, 10.1), Interval(11.5, 11.4, 11.6))
    series = drawn_series("ort", [Interval(v, v - 0.2, v + 0.2) for v in values], (step,))
    chart = history_chart(series, "history-0.png")
    assert series.title == "m ort fp32 opt t2 median" and series.unit == "ms"
    assert chart.plot.series["value|m ort fp32 opt t2 median"] == tuple((float(i), v) for i, v in enumerate(values))
    assert {x for x, _ in chart.plot.series["step|3"]} == {2.5}
    (band,) = chart.plot.figure.axes[0].collections
    assert band.get_paths()[0].get_extents().y0 == pytest.approx(9.8)
    assert band.get_paths()[0].get_extents().y1 == pytest.approx(11.7)
    spots = [spot for spot in chart.spots if spot.kind == "pt"]
    (step_spot,) = [spot for spot in chart.spots if spot.kind == "step"]
    assert [spot.tip.split("\n")[0] for spot in spots] == [f"run run-{i}" for i in range(5)]
    assert spots[2].box.x0 < step_spot.box.x0 < spots[3].box.x0 and "step at run run-3 (+15.0%)" in step_spot.tip
    image = imread(io.BytesIO(png_files([chart.plot])[chart.plot.path]))
    height, width = image.shape[:2]
    # figure coordinates run up from the bottom, the image's rows down from the top
    centres = [image[round((1 - spot.box.intervaly.mean()) * height), round(spot.box.intervalx.mean() * width)]
               for spot in spots]
    assert all(tuple(pixel[:3]) == pytest.approx(to_rgba("tab:blue")[:3], abs=0.02) for pixel in centres)
    assert spots[3].box.y0 > spots[0].box.y1, "11.5 above 10"
