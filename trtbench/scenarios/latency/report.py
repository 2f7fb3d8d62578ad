"""The latency scenario's report section: the speedup table and plots, then each other table of the records."""

from __future__ import annotations

from typing import Optional

from trtbench.core.env import environment_name
from trtbench.report.answer import answer_blocks
from trtbench.report.colors import VariantColors, variant_colors
from trtbench.report.deprecations import deprecations_markdown
from trtbench.report.sweeps import sweep_markdown, sweep_plots
from trtbench.report.plots import latency_plot, speedup_plot
from trtbench.report.reduced import reduced_precision_markdown, speed_accuracy_plot
from trtbench.report.section import Plot, ReportSection
from trtbench.report.tables import deployment_table, isolation_table, markdown_table
from trtbench.report.knobs import knob_markdown
from trtbench.report.regimes import regimes_json, regimes_markdown
from trtbench.results.recommend import recommend, recommendation_markdown
from trtbench.results.resultset import ResultSet
from trtbench.results.successors import deprecations_of

DEPLOYMENT_TEXT = (
    "Build time in this process; first call: the compile that torch.compile defers to it; artifact "
    "load and cold first call: the saved file loaded in a fresh process (the verify worker); peak "
    "memory: host RSS high-water mark (device memory on CUDA) while building and during one call.")
ISOLATION_TEXT = (
    "Where each variant was timed: `process` is a worker process of its own per variant (as a "
    "deployment runs one runtime per process), asked for one block at a time while the others wait "
    "blocked; `in_process` is this process. After each block the process waits until its threads "
    "are idle (settle; its CPU is what spinning cost), so the next block starts on quiet cores. "
    "CPU between blocks: what a worker's process used while others were timed (about 0 when settled). "
    "Allocator: the state its process started in (`benchmark.allocator`: default is glibc as a fresh "
    "deployment starts; tuned, jemalloc, tcmalloc are the knobs a deployment sets), and glibc's mmap "
    "threshold when its timed calls began: the worker loads its payload file-backed, so only what the "
    "variant's own load, build and first calls freed has raised it, as in a deployment that loads the "
    "same file. Page faults / call: minor page faults of its process per timed call; thousands mean its "
    "allocator hands buffers back to the OS after each call and faults them in again (with "
    "`benchmark.allocator: tuned`, jemalloc or tcmalloc, a deployment avoids that cost). "
    "Switch-in call: a variant whose calls are shorter than `switch_in_below_s` starts each block "
    "with one call kept out of its samples, since the first call after another variant ran refills "
    "the caches that one evicted, which a runtime deployed alone never pays; shown against the "
    "median (at the first point).")


def _by_environment(results: ResultSet) -> dict[str, ResultSet]:
    """One set per environment (a bar chart has no axis for the machine, so each gets its own)."""
    sets: dict[str, ResultSet] = {}
    for record in results:
        env = record.environment
        part = sets.setdefault(env, ResultSet(environments={env: results.environments.get(env, {"id": env})}))
        part.add(record)
    return sets


def latency_plots(results: ResultSet, colors: VariantColors) -> list[Plot]:
    """``latency.png`` and ``speedup.png`` (with several environments, a pair per environment)."""
    sets = _by_environment(results)
    plots = []
    for env, part in sets.items():
        suffix, where = (f"-{env}", f": {environment_name(part.environments[env])}") if len(sets) > 1 else ("", "")
        plots += [latency_plot(part, f"latency{suffix}.png", title=f"Latency{where}", colors=colors),
                  speedup_plot(part, f"speedup{suffix}.png", title=f"Speedup vs eager{where}", colors=colors)]
    return [plot for plot in plots if plot is not None]


def latency_section(results: ResultSet, budget_ms: Optional[float]) -> ReportSection:
    """The section: its Markdown, its figures and its results.json entries."""
    parts = ["## Speedup", "", markdown_table(results)]
    colors = variant_colors(results)  # a pure function of the results: every section's plots agree
    plots = latency_plots(results, colors)
    parts += [plot.markdown for plot in plots] + ([""] if plots else [])
    sweep = sweep_plots(results, budget_ms, colors)
    tradeoff = speed_accuracy_plot(results, "int8_speed_accuracy.png", colors)
    tradeoffs = [tradeoff] if tradeoff is not None else []
    recommendations = recommend(results, budget_ms) if budget_ms is not None else []
    texts = [sweep_markdown(results, sweep) if sweep else "", reduced_precision_markdown(results, tradeoffs),
             regimes_markdown(results), knob_markdown(results),
             recommendation_markdown(recommendations, results.environments) if recommendations else "",
             deprecations_markdown(results)]
    parts += [text for text in texts if text]
    deployment = deployment_table(results)
    if deployment:
        parts += ["## Build, cold start and memory", "", DEPLOYMENT_TEXT, "", deployment]
    isolation = isolation_table(results)
    if isolation:
        parts += ["## Isolation", "", ISOLATION_TEXT, "", isolation]
    # a deprecation's note is said once, in its own section
    warned = sorted({(r.case.label, w) for r in results for w in r.warnings
                     if w not in {d.note for d in deprecations_of(r)}})
    if warned:
        parts += ["## Warnings captured", "", *[f"- {variant}: {w}" for variant, w in warned], ""]
    json = {"recommendations": [r.to_dict() for r in recommendations]} if recommendations else {}
    timed_points = regimes_json(results)
    if timed_points:
        json["regimes"] = timed_points
    return ReportSection("\n".join(parts), json, tuple(plots + sweep + tradeoffs), tuple(answer_blocks(results)))
