"""The LLM serving section of a report: a table of each decoder slot's peak QPS under its TTFT and TPOT bounds, a plot
of both percentiles against the offered QPS, and the recommendation under load (a pure function of the results)."""

from __future__ import annotations

import statistics
from typing import Optional

import numpy as np
from matplotlib.figure import Figure

from trtbench.core.env import environment_name
from trtbench.core.status import Status
from trtbench.report.colors import marker
from trtbench.scenarios.serving.loadgen.peak_estimate import LoadStep
from trtbench.report.plots import finish, label_axes
from trtbench.report.section import Plot, ReportSection
from trtbench.report.late_share import SharePanel, late_share_plot
from trtbench.report.text import number_text
from trtbench.scenarios.generate import GenerateRecord
from trtbench.scenarios.serving.tokens.result import ServedDecoder, DecoderServingResult, DecoderStep

COLUMNS = ("model", "point", "variant", "precision", "workers x threads", "bounds", "lengths", "batching", "peak QPS",
           "request/s", "output tok/s", "TTFT p50 / pB ms", "TPOT p50 / pB ms", "ITL p50 / p99 ms", "goodput",
           "LoadGen TTFT / TPOT pB ms", "LoadGen verdict", "peak rule", "steps: offered QPS pass|FAIL (late/queries)",
           "status", "LoadGen logs")
DEFINITIONS = (
    "A query is one sequence: at a generate point with batch 1 (its prompt and new tokens), or drawn from the entry's "
    "`lengths` (p: prompt tokens, n: new tokens); a worker process serves one query at a time, a static batch of them "
    "gathered within a window, or a continuous batch that each query joins as it arrives (batching: its mode); QPS, "
    "TTFT and TPOT count sequences. LoadGen issues queries as Poisson arrivals at each offered QPS, with token "
    "latencies (`use_token_latencies`, the first token reported through `FirstTokenComplete`, `n_tokens` at "
    "completion). TTFT: a query's issue to its first token, queueing included; TPOT: (E2E - TTFT) / (tokens - 1); ITL: "
    "the gaps between consecutive tokens; all from the queries' own token stamps. A query is late when its TTFT or its "
    "TPOT is over its bound; goodput is the share that is not. Peak rule `joint-estimate/1 at 90%`: the peak is the "
    "load at which the late share fitted to every step reaches the share the percentile allows [its 90% interval], "
    "with the queries and minutes the search took, why it stopped and LoadGen's verdict on a confirming run at the "
    "interval's low end (the figures are that run's). Peak rule `late-share-bound/1 at C`: a step passes when the "
    "one-sided upper bound at confidence C on the late share is within the share the percentile allows, with LoadGen's "
    "minimum duration and queries met; the peak is the median over the searches of the highest offered QPS that passed "
    "[lowest-highest], the figures those of the step at the peak (at a fixed qps, its run); a step is marked pass or "
    "FAIL by that bound under either rule. LoadGen's verdict also asks its own "
    "early stopping (at 0.99) and its percentiles, from its schedule.")


def served_decoders(results) -> list[tuple[ServedDecoder, DecoderServingResult]]:
    """Every (part, result) of LLM serving, in the parts' order."""
    return [(part, result) for part in results.parts(ServedDecoder.KIND) for result in part.results]


def decoder_peak_rules(results) -> set[str]:
    """The rules that found the LLM serving peaks in ``results``."""
    return {result.peak_rule for _, result in served_decoders(results) if result.peaks}


def _pair(step: Optional[DecoderStep], metric: str, percentile: float) -> str:
    if step is None or not step.queries:
        return ""
    return f"{step.percentile_ms(metric, 0.5):.4g} / {step.percentile_ms(metric, percentile):.4g}"


def _steps(result: DecoderServingResult) -> str:
    return ", ".join(f"{s.offered_qps:.3g} {'pass' if s.passed else 'FAIL'} ({s.late}/{s.queries})"
                     for s in result.steps)


def _cells(part: ServedDecoder, result: DecoderServingResult) -> list[str]:
    step, key = result.peak_step, result.percentile_key
    if result.interval is not None:
        peak = result.interval.text()
    elif result.peaks:
        peak = result.peak_interval.text(".3g")
    else:
        peak = f"{step.request_per_s:.3g} completed at {step.offered_qps:g} offered" if step else ""
    loadgen = step.summary if step else None
    itl = step.itl_ms if step else {}
    status = str(result.status) + (f": {result.reason}" if result.reason else "")
    return [part.model, part.point, part.decoder, part.precision, f"{result.workers} x {result.threads}",
            result.bounds_text, result.lengths_text, result.batching_text, peak,
            number_text(step.request_per_s if step else None, 3),
            number_text(step.output_tokens_per_s if step else None, 1),
            _pair(step, "ttft", result.percentile), _pair(step, "tpot", result.percentile),
            f"{itl['p50']:.3g} / {itl['p99']:.3g}" if itl else "",
            f"{step.goodput:.1%}" if step and step.queries else "",
            (f"{number_text(loadgen.ttft_ms.get(key), 2)} / {number_text(loadgen.tpot_ms.get(key), 2)}"
             if loadgen else ""),
            ("VALID" if loadgen.valid else "INVALID") if loadgen else "", result.peak_rule, _steps(result),
            status.replace("\n", " "), f"`{result.log_dir}/`" if result.log_dir else ""]


def decoder_serving_markdown(results, plots: list[Plot]) -> str:
    """The report's LLM serving section (empty when nothing was served)."""
    pairs = served_decoders(results)
    if not pairs:
        return ""
    keys = {result.percentile_key for _, result in pairs}
    header = " | ".join(COLUMNS).replace("pB", keys.pop() if len(keys) == 1 else "pB (the bounds' percentile)")
    lines = ["## LLM serving under load (MLPerf LoadGen, Server scenario, token latencies)", "", DEFINITIONS, "",
             "| " + header + " |", "|" + "|".join("---" for _ in COLUMNS) + "|"]
    lines += ["| " + " | ".join(c.replace("|", "/") for c in _cells(part, result)) + " |" for part, result in pairs]
    lines += [""] + [plot.markdown for plot in plots] + ([""] if plots else [])
    return "\n".join(lines) + "\n"


def _series_name(part: ServedDecoder, result: DecoderServingResult, several_models: bool) -> str:
    return ((f"{part.model} " if several_models else "") + f"{part.decoder} {part.precision} {part.point} "
            f"{result.label}" + ("" if result.peaks else " (fixed load)"))


def decoder_share_panels(results) -> list[SharePanel]:
    """A late-share panel per result whose peak is a joint estimate."""
    return [SharePanel(f"{part.model} {part.slot} {part.point} {result.label}",
                       f"late share (over {result.bounds_text})",
                       tuple(LoadStep(step.offered_qps, step.repeat,
                                  np.array(step.late_flags(result.ttft_bound_ms, result.tpot_bound_ms), dtype=bool))
                             for step in result.steps if not step.confirm and step.queries),
                       1 - result.percentile, result.peak_qps, result.interval)
            for part, result in served_decoders(results) if result.interval is not None]


def decoder_serving_plot(results, file_name: str) -> Optional[Plot]:
    """TTFT and TPOT at the bounds' percentile against offered QPS; None when nothing was served."""
    pairs = [(part, result) for part, result in served_decoders(results) if any(s.queries for s in result.steps)]
    if not pairs:
        return None
    fig = Figure(figsize=(12.0, 4.8))
    axes = dict(zip(("ttft", "tpot"), fig.subplots(1, 2)))
    several_models = len({part.model for part, _ in pairs}) > 1
    for rank, (part, result) in enumerate(pairs):
        name = _series_name(part, result, several_models)
        for metric, ax in axes.items():
            at: dict[float, list[float]] = {}
            for step in result.steps:
                if step.queries:
                    at.setdefault(round(step.offered_qps, 3), []).append(step.percentile_ms(metric, result.percentile))
            qps = sorted(at)
            line, = ax.plot(qps, [statistics.median(at[q]) for q in qps], marker=marker(rank), markersize=3, label=name)
            ax.scatter([q for q in qps for _ in at[q]], [ms for q in qps for ms in at[q]], s=8, alpha=0.4,
                       color=line.get_color())
    for metric, ax in axes.items():
        bounds = sorted({(getattr(result, f"{metric}_bound_ms"), result.percentile_key) for _, result in pairs})
        for bound, key in bounds:
            ax.axhline(bound, color="black", linestyle="--", linewidth=0.8)
            ax.annotate(f"bound: {key} <= {bound:g} ms", (0, bound), xycoords=("axes fraction", "data"),
                        textcoords="offset points", xytext=(4, 3), fontsize="small")
        ax.set_yscale("log")
        label_axes(ax, "offered QPS (LoadGen server_target_qps)", f"{metric.upper()} at the bounds' percentile (ms)",
                   f"LLM serving: {metric.upper()} vs offered load")
    return finish(fig, file_name, legend=axes["tpot"])


def _accurate(results, part: ServedDecoder) -> bool:
    """Whether the generate row the part serves passed its accuracy check."""
    row = results.part(GenerateRecord.KIND, part.key)
    return row is not None and row.data.get("accuracy", {}).get("ok", False)


def recommend_decoder_serving(results) -> list[dict]:
    """Per environment, model, threads, point and bounds: the accurate result with the highest peak."""
    groups: dict[tuple, list[tuple[ServedDecoder, DecoderServingResult]]] = {}
    for part, result in served_decoders(results):
        if result.peaks or result.status is Status.FAILED:
            key = (part.environment, part.model, part.threads, part.point, result.bounds_text)
            groups.setdefault(key, []).append((part, result))
    out = []
    for (environment, model, threads, point, bounds), pairs in groups.items():
        ok = [(p, r) for p, r in pairs if r.status is Status.OK and r.peaks and _accurate(results, p)]
        best = max([(p, r) for p, r in ok if r.peak_qps > 0], key=lambda pair: (pair[1].peak_qps, -pair[1].workers),
                   default=None)
        choice = None
        if best is not None:
            part, result = best
            choice = {"slot": part.slot, "variant": part.decoder, "precision": part.precision,
                      "workers": result.workers, "threads": result.threads, "batching": result.batching,
                      "batching_text": result.batching_text, "peak_qps": result.peak_qps,
                      "peaks": list(result.peaks), "peak_rule": result.peak_rule}
        out.append({"environment": environment, "model": model, "threads": threads, "point": point, "bounds": bounds,
                    "candidates": len(ok), "choice": choice})
    return out


def recommendation_text(entry: dict, environments: dict) -> str:
    where = (f"{environment_name(environments.get(entry['environment'], {'id': entry['environment']}))}, "
             f"{entry['model']} {entry['point']}")
    choice = entry["choice"]
    if choice is None:
        return (f"{where}: under load, NOTHING stayed within {entry['bounds']} among {entry['candidates']} served "
                f"configuration(s)")
    low, high = min(choice["peaks"]), max(choice["peaks"])
    return (f"{where}: under load, {choice['variant']} {choice['precision']} with {choice['workers']} worker(s) x "
            f"{choice['threads']} thread(s), batching {choice['batching_text']}: "
            f"{choice['peak_qps']:.3g} QPS [{low:.3g}-{high:.3g}] within "
            f"{entry['bounds']} (the most of {entry['candidates']} served configuration(s))")


def decoder_serving_section(results) -> Optional[ReportSection]:
    """The section; None without LLM serving."""
    plots = [plot for plot in (decoder_serving_plot(results, "decoder_serving.png"),
                               late_share_plot(decoder_share_panels(results), "decoder_serving_late_share.png"))
             if plot is not None]
    markdown = decoder_serving_markdown(results, plots)
    under_load = recommend_decoder_serving(results)
    if not markdown:
        return None
    if under_load:
        markdown += "\n".join(["## Recommendation under load (LLM serving)", "",
                               "The accurate decoder, precision and worker count with the highest peak QPS whose "
                               "TTFT and TPOT stayed within both bounds, per point.", "",
                               *[f"- {recommendation_text(r, results.environments)}" for r in under_load]]) + "\n"
    return ReportSection(markdown, {"decoder_serving_recommendations": under_load} if under_load else {}, tuple(plots))


def decoder_serving_summary(results) -> list[str]:
    """The recommendation under load, as lines for the command line."""
    under_load = recommend_decoder_serving(results)
    return (["recommendation under load (LLM serving):",
             *[f"  {recommendation_text(r, results.environments)}" for r in under_load]] if under_load else [])
