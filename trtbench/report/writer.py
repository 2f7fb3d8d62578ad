"""Writes a run's (or a merge's) outputs atomically: results.json, results.csv, plots and report.md."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from trtbench.core.env import environment_name
from trtbench.core.fsutil import atomic_write_json, atomic_write_text
from trtbench.results.recommend import (recommend, recommend_serving, recommendation_markdown,
                                serving_recommendation_markdown)
from trtbench.report.colors import VariantColors, variant_colors
from trtbench.report.markdown import report_markdown, run_intro
from trtbench.report.matrix import sweep_markdown, write_sweep_plots
from trtbench.report.plots import latency_plot, speedup_plot
from trtbench.report.profile import draw_layer_plots
from trtbench.report.reduced import reduced_precision_markdown, speed_accuracy_plot
from trtbench.report.serving import serving_markdown, serving_plot
from trtbench.report.tables import csv_text
from trtbench.results.resultset import ResultSet


def _by_environment(results: ResultSet) -> dict[str, ResultSet]:
    """One set per environment (a bar chart has no axis for the machine, so each gets its own)."""
    sets: dict[str, ResultSet] = {}
    for record in results:
        env = record.environment
        part = sets.setdefault(env, ResultSet(environments={env: results.environments.get(env, {"id": env})}))
        part.add(record)
    return sets


def write_plots(out_dir: Path, results: ResultSet, colors: VariantColors | None = None) -> list[Path]:
    """Latency and speedup figures under ``<out>/plots`` (none when no record has timings); with several
    environments (a merge), one pair per environment, ``latency-<environment id>.png``. ``colors``: the
    run's (by default, from ``results``), the same for every environment."""
    colors = colors or variant_colors(results)
    sets = _by_environment(results)
    plots = []
    for env, part in sets.items():
        suffix, where = (f"-{env}", f": {environment_name(part.environments[env])}") if len(sets) > 1 else ("", "")
        plots += [latency_plot(part, out_dir / "plots" / f"latency{suffix}.png", title=f"Latency{where}", colors=colors),
                  speedup_plot(part, out_dir / "plots" / f"speedup{suffix}.png", title=f"Speedup vs eager{where}",
                               colors=colors)]
    return [plot.path for plot in plots if plot is not None]


def write_outputs(out_dir: Path, config, results: ResultSet, interrupted: bool, manifest: Path | None,
                  profiles: dict | None = None) -> dict[str, Path]:
    """Write a run's output files, its report headed from its config; returns their paths by kind."""
    return write_report(out_dir, results, run_intro(config), config.budget.p99_ms, interrupted=interrupted,
                        manifest=manifest, profiles=profiles)


def write_report(out_dir: Path, results: ResultSet, intro: list[str], p99_budget_ms: Optional[float] = None, *,
                 interrupted: bool = False, manifest: Path | None = None,
                 profiles: dict | None = None) -> dict[str, Path]:
    """Write every output file under the report's ``intro`` lines; returns their paths by kind.

    With a p99 budget, results.json gets a top-level ``recommendations`` list
    (:meth:`trtbench.results.recommend.Recommendation.to_dict`), recomputable from its records; with serving
    results, a ``serving_recommendations`` list (:meth:`trtbench.results.recommend.ServingRecommendation.to_dict`).
    """
    files = {"json": out_dir / "results.json", "csv": out_dir / "results.csv", "markdown": out_dir / "report.md"}
    if profiles is not None:
        draw_layer_plots(profiles, out_dir)
    recommendations = recommend(results, p99_budget_ms) if p99_budget_ms is not None else []
    under_load = recommend_serving(results)
    data = results.to_dict()
    if recommendations:
        data["recommendations"] = [r.to_dict() for r in recommendations]
    if under_load:
        data["serving_recommendations"] = [r.to_dict() for r in under_load]
    atomic_write_json(files["json"], data)
    atomic_write_text(files["csv"], csv_text(results))
    colors = variant_colors(results)  # one colour per variant in every plot
    plots = [path.relative_to(out_dir) for path in write_plots(out_dir, results, colors)]
    sweep = [chart.path.relative_to(out_dir)
             for chart in write_sweep_plots(out_dir / "plots", results, p99_budget_ms, colors)]
    sections = [sweep_markdown(results, sweep)] if sweep else []
    tradeoff = speed_accuracy_plot(results, out_dir / "plots" / "int8_speed_accuracy.png", colors)
    reduced = reduced_precision_markdown(results, [tradeoff.path.relative_to(out_dir)] if tradeoff is not None else [])
    if reduced:
        sections.append(reduced)
    serving = serving_plot(results, out_dir / "plots" / "serving.png", colors)
    serving_section = serving_markdown(results, [serving.relative_to(out_dir)] if serving is not None else [])
    if serving_section:
        sections.append(serving_section)
    if under_load:
        sections.append(serving_recommendation_markdown(under_load, results.environments))
    if recommendations:
        sections.append(recommendation_markdown(recommendations, results.environments))
    atomic_write_text(files["markdown"], report_markdown(intro, results, interrupted, manifest, plots, profiles,
                                                         sections))
    if manifest:
        files["manifest"] = manifest
    return files
