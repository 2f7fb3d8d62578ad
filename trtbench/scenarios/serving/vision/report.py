"""The serving section of a report: a table of each variant's peak QPS under its bound, a plot of the bound's
percentile against the offered QPS, and the recommendation under load (a pure function of the results)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Optional

import numpy as np
from matplotlib.figure import Figure

from trtbench.core.env import environment_name
from trtbench.core.record import Record
from trtbench.scenarios.serving.loadgen.peak_estimate import LoadStep
from trtbench.report.colors import marker, variant_colors
from trtbench.report.plots import finish, label_axes
from trtbench.report.section import Plot
from trtbench.report.text import number_text
from trtbench.results.resultset import ResultSet
from trtbench.core.status import Status
from trtbench.report.late_share import SharePanel
from trtbench.scenarios.serving.vision.result import ServedCase, ServingResult

COLUMNS = ("model", "variant", "precision", "workers x threads", "runtime threads", "batching",
           "peak QPS within bound", "p50 ms", "p90 ms", "p99 ms", "bound", "peak rule", "LoadGen verdict", "service ms",
           "service at the queue ms (p50 / p99 / max)",
           "batch sizes used", "status", "LoadGen logs")


def served(results: ResultSet) -> list[tuple[Record, ServingResult]]:
    """Every (record, serving result), in record order."""
    return [(record, result) for record in results for result in serving_of(results, record)]


def serving_of(results: ResultSet, record: Record) -> tuple[ServingResult, ...]:
    """What the serving scenarios gave ``record``'s case (empty when it was not served)."""
    part = results.part(ServedCase.KIND, record.key)
    return part.results if part is not None else ()


def peak_rules(results: ResultSet) -> set[str]:
    """The rules that found the peaks in ``results`` (:attr:`ServingResult.peak_rule` of each search)."""
    return {result.peak_rule for part in results.parts(ServedCase.KIND) for result in part.results if result.peaks}


def _cells(record: Record, result: ServingResult, environments: dict, several_envs: bool) -> list[str]:
    run = result.peak_run
    lat = run.summary.latency_ms if run else {}
    if result.interval is not None:
        peak = result.interval.text()
    elif result.peaks:
        searches = f"{len(result.peaks)} search" + ("es" if len(result.peaks) > 1 else "")
        peak = f"{result.peak_interval.text('.1f')} ({searches})"
    else:
        peak = f"{run.summary.completed_qps:.1f} completed at {run.offered_qps:g} offered" if run and \
            run.summary.completed_qps is not None else ""
    histogram = ", ".join(f"{size}: {calls}" for size, calls in result.batch_histogram.items())
    verdict = ("VALID" if run.summary.valid else "INVALID") if run else ""
    model = record.case.model + (f" ({environment_name(environments.get(record.environment, {}))})"
                                 if several_envs else "")
    status = result.status + (f": {result.reason}" if result.reason else "")
    facts = result.worker_facts
    runtime = facts.get("runtime_threads", facts.get("intra_op_threads", ""))
    return [model, record.case.label, record.case.precision, f"{result.workers} x {result.threads}", str(runtime),
            result.batching_text, peak,
            number_text(lat.get("p50"), 2), number_text(lat.get("p90"), 2), number_text(lat.get("p99"), 2),
            f"{result.percentile_key} <= {result.bound_ms:g} ms", result.peak_rule, verdict,
            number_text(result.service_ms, 2), " / ".join(f"{ms:.2f}" for ms in result.service_tail_ms or ()),
            histogram,
            status.replace("\n", " "), f"`{result.log_dir}/`"]


def serving_markdown(results: ResultSet, plots: list[Plot]) -> str:
    """The report's serving section (empty when nothing was served)."""
    pairs = served(results)
    if not pairs:
        return ""
    several = len({record.environment for record, _ in pairs}) > 1
    lines = ["## Serving under load (MLPerf LoadGen, Server scenario)", "",
             "Poisson arrivals from LoadGen at each offered QPS; each variant hosted by worker processes (workers x "
             "intra-op threads each), one synchronized call per query (or per gathered batch). Peak QPS: the median "
             "over the repeated searches of the highest offered QPS whose run passed [lowest-highest]; the latencies "
             "are LoadGen's, at that peak; with the rule `joint-estimate/1 at 90%`, the load at which the late share "
             "fitted to every step reaches the share the percentile allows [its 90% interval], the queries and minutes "
             "the search took, why it stopped (its resolution, or its budget), and LoadGen's verdict on a confirming "
             "run at the interval's low end (the latencies are that run's). Other peak rules: how a run passed: "
             "`late-share-bound/1 at C`, when the upper bound at confidence C on its share of queries over the bound "
             "is within the share the percentile allows (1% at p99); `loadgen-verdict`, LoadGen's VALID; "
             "`measured-percentile`, results from before the rule was recorded, judged by the measured percentile "
             "alone (biased upward). Verdict: LoadGen's own (it also needs its early-stopping test, i.e. enough "
             "queries to show the percentile). Service: one query alone in a worker; at the queue: each served query's "
             "call in its worker over every run, its median, p99 and largest (the tail that limits the peak).",
             "", "| " + " | ".join(COLUMNS) + " |", "|" + "|".join("---" for _ in COLUMNS) + "|"]
    lines += ["| " + " | ".join(c.replace("|", "/") for c in _cells(record, result, results.environments, several))
              + " |" for record, result in pairs]
    lines += [""] + [plot.markdown for plot in plots] + ([""] if plots else [])
    return "\n".join(lines) + "\n"


def _series_name(record: Record, result: ServingResult, several_models: bool) -> str:
    return (f"{record.case.model} " if several_models else "") + f"{record.case.label} {record.case.precision} " \
        f"{result.label}" + ("" if result.peaks else " (fixed load)")


def serving_plot(results: ResultSet, file_name: str) -> Optional[Plot]:
    """The bound's percentile against offered QPS, a line per served result; None without any."""
    pairs = [(record, result) for record, result in served(results) if result.runs]
    if not pairs:
        return None
    fig = Figure(figsize=(10.0, 4.8))
    ax = fig.add_subplot()
    several_models = len({record.case.model for record, _ in pairs}) > 1
    styles = variant_colors(results).styles(
        {_series_name(record, result, several_models): record.case.label for record, result in pairs})
    for record, result in pairs:
        at: dict[float, list[float]] = {}  # offered QPS -> the percentile of each run there (repeats)
        for run in result.runs:
            if run.summary.latency_ms.get(result.percentile_key) is not None:
                at.setdefault(round(run.offered_qps, 3), []).append(run.summary.latency_ms[result.percentile_key])
        name = _series_name(record, result, several_models)
        color, rank = styles[name]
        qps = sorted(at)
        ax.plot(qps, [statistics.median(at[q]) for q in qps], marker=marker(rank), markersize=3, color=color,
                label=name)
        ax.scatter([q for q in qps for _ in at[q]], [ms for q in qps for ms in at[q]], s=8, alpha=0.4, color=color)
    for bound, key in sorted({(result.bound_ms, result.percentile_key) for _, result in pairs}):
        ax.axhline(bound, color="black", linestyle="--", linewidth=0.8)
        ax.annotate(f"bound: {key} <= {bound:g} ms", (0, bound), xycoords=("axes fraction", "data"),
                    textcoords="offset points", xytext=(4, 3), fontsize="small")
    ax.set_yscale("log")
    label_axes(ax, "offered QPS (LoadGen server_target_qps)", "latency at the bound's percentile (ms)",
               "Serving: latency percentile vs offered load")
    return finish(fig, file_name, legend=ax)


def share_panels(results: ResultSet) -> list[SharePanel]:
    """A panel per served configuration whose peak is a joint estimate."""
    return [SharePanel(f"{record.case.label} {record.case.precision} {result.label}",
                       f"late share (over {result.bound_ms:g} ms)",
                       tuple(LoadStep(run.offered_qps, run.repeat,
                                      np.array(run.late_flags(result.bound_ms), dtype=bool))
                             for run in result.runs if not run.confirm and run.latencies_ms),
                       1 - result.percentile, result.peak_qps, result.interval)
            for record, result in served(results) if result.interval is not None]


@dataclass(frozen=True)
class ServingRecommendation:
    """Under load, per model, environment and bound: the served result with the highest peak."""

    environment: str
    model: str
    bound_ms: float
    percentile_key: str  # p99
    candidates: int  # peak searches that ran ok on accurate records
    choice: Optional[tuple[Record, ServingResult]] = None

    def text(self, environments: dict) -> str:
        where = f"{environment_name(environments.get(self.environment, {'id': self.environment}))}, {self.model}"
        bound = f"{self.percentile_key} <= {self.bound_ms:g} ms"
        if self.choice is None:
            return f"{where}: under load, NOTHING stayed within {bound} among {self.candidates} served configuration(s)"
        record, result = self.choice
        run = result.peak_run
        there = ("no confirming run there" if run is None else
                 f"{result.percentile_key} {run.summary.latency_ms.get(result.percentile_key, float('nan')):.2f} ms "
                 "there")
        return (f"{where}: under load, {record.case.label} {record.case.precision} with {result.workers} worker(s) x "
                f"{result.threads} thread(s), batching {result.batching_text}: "
                f"{result.peak_interval.text('.1f', ' QPS')} within {bound} "
                f"({there}; the most of {self.candidates} served configuration(s))")

    def to_dict(self) -> dict:
        choice = None
        if self.choice is not None:
            record, result = self.choice
            choice = {"case_key": record.case.key, "variant": record.case.variant, "options": record.case.options,
                      "precision": record.case.precision, "workers": result.workers, "threads": result.threads,
                      "batching": result.batching, "peak_qps": result.peak_qps, "peaks": list(result.peaks),
                      "peak_rule": result.peak_rule}
        return {"environment": self.environment, "model": self.model, "bound_ms": self.bound_ms,
                "percentile": self.percentile_key, "candidates": self.candidates, "fits": choice is not None,
                "choice": choice}


def recommend_serving(results: ResultSet) -> list[ServingRecommendation]:
    """One :class:`ServingRecommendation` per (environment, model, bound) with peak searches."""
    groups: dict[tuple, list[tuple[Record, ServingResult]]] = {}
    for record, result in served(results):
        if result.peaks or result.status is not Status.OK:
            key = (record.environment, record.case.model, result.bound_ms, result.percentile_key)
            groups.setdefault(key, []).append((record, result))
    out = []
    for (environment, model, bound, key), pairs in groups.items():
        ok = [(r, s) for r, s in pairs if s.status is Status.OK and s.peaks and r.accuracy and r.accuracy.get("ok")]
        fitting = [(r, s) for r, s in ok if s.peak_qps > 0]
        choice = max(fitting, key=lambda pair: (pair[1].peak_qps, -pair[1].workers), default=None)
        out.append(ServingRecommendation(environment, model, bound, key, len(ok), choice))
    return out


def serving_recommendation_markdown(recommendations: list[ServingRecommendation], environments: dict) -> str:
    lines = ["## Recommendation under load", "",
             "From the serving scenario: the variant, worker count, threads and batching with the highest peak QPS "
             "whose latency percentile stayed within the bound under LoadGen's Poisson load; only variants that "
             "passed their accuracy check count.", ""]
    lines += [f"- {r.text(environments)}" for r in recommendations]
    return "\n".join(lines) + "\n"
