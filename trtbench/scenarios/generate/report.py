"""The generate scenario's report section: per build group every decoder's figures, the recommendations, plots."""

from __future__ import annotations

from typing import Optional

from matplotlib.figure import Figure

from trtbench.core.env import environment_name
from trtbench.report.colors import marker
from trtbench.report.plots import finish, label_axes
from trtbench.report.rows import coverage_of, grouped
from trtbench.report.section import Plot, ReportSection
from trtbench.report.text import number_text
from trtbench.core.status import Status
from trtbench.measure.bandwidth import MemoryCeiling
from trtbench.measure.token_timing import DEFINITIONS, OUTPUT_LENGTH
from trtbench.scenarios.generate.result import process_count, requests_per_process

HEADER = ("| point | variant | precision | status | TTFT ms | TPOT ms | E2E ms | decode tok/s | prefill tok/s "
          "| ITL p50 / p99 ms | TTFT x | TPOT x | E2E x | accuracy vs eager fp32 | decode GB/s (% triad, % datasheet) "
          "| peak RSS / KV cache MB | requests |")
BANDWIDTH_NOTE = (
    "Decode GB/s: the bytes a decode step reads over the median TPOT. The bytes are the weights as deployed at the "
    "row's precision (matmul weights and norms, not the input embedding; weight-only int8/int4 approximately: 1 or "
    "0.5 byte per matmul weight plus a 4-byte scale per block of 32) and the KV cache at the mean decode position "
    "(prompt + new/2). % triad is of the bandwidth trtbench measured (STREAM's triad), % datasheet of the device's "
    "datasheet figure (unknown for a CPU); weights and a cache that fit in the last-level cache, which the triad's "
    "arrays do not, can read above both. Peak RSS: the worker's peak resident memory; KV cache: at the last token.")


def _median(metric: dict) -> str:
    """A median with its 95% interval's half-width."""
    rel = metric.get("median_ci_rel")
    spread = f" ±{metric['median'] * rel:.3g}" if rel is not None and rel != float("inf") else ""
    return f"{metric['median']:.4g}{spread}"


def _speedup(speedup: Optional[dict]) -> str:
    if not speedup:
        return ""
    interval = f" [{speedup['low']:.2f}, {speedup['high']:.2f}]" if speedup.get("low") is not None else ""
    return f"{speedup['value']:.2f}x{interval}"


def _accuracy(accuracy: Optional[dict]) -> str:
    if not accuracy:
        return ""
    top1 = ("top-1 n/a" if accuracy.get("top1_agree") is None else f"top-1 {accuracy['top1_agree']:.3f}")
    prefix = f", greedy prefix {accuracy['greedy_prefix']}" if "greedy_prefix" in accuracy else ""
    return (f"cos {accuracy['cosine_min']:.6f}, {top1} over {accuracy['top1_positions']}/{accuracy['positions']} "
            f"positions, max abs {accuracy['max_abs_err']:.2g}{prefix}")


def _variant(part) -> str:
    """The decoder's name, flagged where its per-token times are not streamed."""
    how = part.data.get("facts", {}).get("per_token_times", "streamed")
    return part.decoder if how == "streamed" else f"{part.decoder} (per-token times {how})"


def bandwidth_text(part, ceiling: Optional[MemoryCeiling]) -> str:
    """``12.3 (45%, -)``: the decode step's achieved GB/s and its share of the measured triad and the datasheet."""
    achieved = part.data.get("decode_bytes", {}).get("achieved_bytes_per_s")
    if not achieved:
        return ""
    shares = [ceiling.share(achieved, which) if ceiling is not None else None for which in ("measured", "datasheet")]
    return f"{achieved / 1e9:.3g} ({', '.join('-' if share is None else f'{share:.0%}' for share in shares)})"


def _row(part, ceiling: Optional[MemoryCeiling]) -> str:
    data = part.data
    cells = [part.point, _variant(part), part.precision, str(part.status)]
    metrics = data.get("metrics")
    if metrics:
        speedups = data.get("speedups", {})
        cells += [_median(metrics["ttft_ms"]), _median(metrics["tpot_ms"]), _median(metrics["e2e_ms"]),
                  f"{metrics['decode_tokens_per_s']['median']:.4g}", f"{metrics['prefill_tokens_per_s']['median']:.4g}",
                  f"{metrics['itl_ms']['p50']:.3g} / {metrics['itl_ms']['p99']:.3g}",
                  *[_speedup(speedups.get(name)) for name in ("ttft_ms", "tpot_ms", "e2e_ms")],
                  _accuracy(data.get("accuracy")), bandwidth_text(part, ceiling),
                  f"{data['peak_rss_bytes'] / 2**20:.0f} / {data['kv_cache_bytes'] / 2**20:.3g}",
                  f"{requests_per_process(data)} x {process_count(data)} ({data['stopped_by']})"]
    else:
        cells += [""] * 9 + [_accuracy(data.get("accuracy")), "", "", ""]
    return "| " + " | ".join(cells) + " |"


def process_line(parts: list) -> str:
    """What the table's intervals cover, and the rows whose replicate processes took turns for memory."""
    counts = {process_count(p.data) for p in parts if "requests" in p.data}
    turns = sorted({f"{p.slot} in {len(p.data['process_turns'])} turns" for p in parts if p.data.get("process_turns")})
    line = (f"Intervals (the medians' ± and the speedups'): {coverage_of(counts or {1})}; each decoder timed in "
            f"{'/'.join(str(c) for c in sorted(counts or {1}))} replicate worker process(es), requests: requests per "
            f"process x processes.")
    return line + (f" Processes that did not fit the memory budget together took turns: {', '.join(turns)}."
                   if turns else "")


def memory_lines(parts: list) -> list[str]:
    """The decoder workers' memory groups, as Markdown lines."""
    groups = grouped([p for p in parts if p.data.get("memory")],
                     lambda p: (p.model, p.threads, p.data["memory"]["group"]))
    if not groups:
        return []
    lines = ["### Memory", "", "Each memory group's decoder workers run together, eager fp32 among them as the "
             "reference of the group's speedups; a group's workers close before the next starts.", "",
             "| model | threads | group | workers: estimate / peak RSS MB | run peak MB | budget MB |",
             "|---|---|---|---|---|---|"]
    for (model, threads, index), members in sorted(groups.items()):
        memory = sorted((p.data["memory"] for p in members), key=lambda m: m["run_peak_rss_mb"])[-1]  # the last peak
        slots = {p.slot: p.data["memory"] for p in members}  # the last point's figures: the peaks so far
        workers = ", ".join(f"{slot} {m['estimate_mb']} / {m['worker_peak_rss_mb']}" for slot, m in slots.items())
        lines.append(f"| {model} | t{threads} | {index + 1} of {memory['groups']} | {workers} | "
                     f"{memory['run_peak_rss_mb']:.0f} | {memory['budget_mb']} |")
    return lines + [""]


def cold_starts(parts: list) -> list[str]:
    """Each timed decoder's cold start, and its published artifact's, as Markdown lines."""
    rows: dict[tuple, str] = {}  # the first timed row of each slot
    for part in _timed(parts):
        facts = part.data.get("facts", {})
        key = (part.environment, part.model, part.threads, part.slot)
        if key in rows or "cold_start" not in facts:
            continue
        cold, published = facts["cold_start"], part.data.get("published", {})
        saved = [number_text(published.get(name), digits) for name, digits in (("load_s", 2), ("first_token_ms", 1))]
        rows[key] = (f"| {part.model} | t{part.threads} | {part.decoder} | {part.precision} | {facts.get('build_s')} "
                     f"| {cold['load_s']} | {cold['first_token_ms']} | {' | '.join(saved)} |")
    if not rows:
        return []
    return ["Cold start in a fresh process (a build process builds the artifact, the worker loads it and makes its "
            "first request; compiled's first request compiles its graphs: its facts' compile_s; exported and aoti "
            "export and compile at build time); the saved artifact: the published folder loaded in the verify "
            "worker's fresh process, as `trtbench verify` loads it, and the same first request (empty where nothing "
            "was saved).", "",
            "| model | threads | variant | precision | build s | load s | first token ms | saved artifact load s | "
            "saved first token ms |", "|---|---|---|---|---|---|---|---|---|", *rows.values(), ""]


def recommendations(parts: list) -> list[dict]:
    """Per build group and point: the ok (so accurate) row with the lowest median TPOT, and with the lowest TTFT."""
    found = []
    groups = grouped(_timed(parts), lambda p: (p.environment, p.model, p.threads, p.point))
    for (environment, model, threads, point), rows in groups.items():
        entry = {"environment": environment, "model": model, "threads": threads, "point": point}
        for name, metric in (("lowest_tpot", "tpot_ms"), ("lowest_ttft", "ttft_ms")):
            best = min(rows, key=lambda p: p.data["metrics"][metric]["median"])
            entry[name] = {"variant": best.decoder, "precision": best.precision,
                           metric: round(best.data["metrics"][metric]["median"], 3)}
        found.append(entry)
    return found


def _timed(parts: list) -> list:
    return [p for p in parts if p.status is Status.OK and p.data.get("metrics")]


def steps_plot(parts: list, file_name: str) -> Optional[Plot]:
    """Each decode step's median latency against the KV cache's length; None when none was timed."""
    timed = _timed(parts)
    if not timed:
        return None
    fig = Figure(figsize=(10.0, 4.8))
    ax = fig.add_subplot()
    for rank, part in enumerate(timed):
        steps, prompt = part.data["metrics"]["step_ms"], part.data["prompt_tokens"]
        ax.plot([prompt + i + 1 for i in range(len(steps))], steps, marker=marker(rank), markersize=3,
                label=f"{part.decoder} {part.precision} {part.point}")
    label_axes(ax, "KV cache length at the step (positions)", "decode step latency, median (ms)",
               "Generate: decode step latency vs KV position")
    return finish(fig, file_name, legend=ax)


def batch_plot(parts: list, file_name: str) -> Optional[Plot]:
    """Median decode tokens/s against batch, a line per row's settings; None without two batches."""
    lines: dict[str, dict[int, float]] = {}
    for part in _timed(parts):
        name = f"{part.decoder} {part.precision} p{part.data['prompt_tokens']}-n{part.data['new_tokens']}"
        lines.setdefault(name, {})[part.data["batch"]] = part.data["metrics"]["decode_tokens_per_s"]["median"]
    lines = {name: at for name, at in lines.items() if len(at) > 1}
    if not lines:
        return None
    fig = Figure(figsize=(10.0, 4.8))
    ax = fig.add_subplot()
    for rank, (name, at) in enumerate(lines.items()):
        batches = sorted(at)
        ax.plot(batches, [at[b] for b in batches], marker=marker(rank), label=name)
    label_axes(ax, "batch (sequences per request)", "decode tokens/s, median", "Generate: decode tokens/s vs batch")
    return finish(fig, file_name, legend=ax)


def ceiling_notes(ceilings: list[MemoryCeiling]) -> list[str]:
    """What the bandwidth column's shares are of, once per memory ceiling."""
    notes = []
    for ceiling in ceilings:
        values = ceiling.values
        measured = (f"triad {values['measured_bytes_per_s'] / 1e9:.3g} GB/s ({values['measured_method']}; "
                    f"arrays sized at {values['measured_sized_by']})" if values.get("measured_bytes_per_s")
                    else "triad not measured (benchmark.measure_ceiling: false)")
        sheet = (f"datasheet {values['datasheet_bytes_per_s'] / 1e9:.4g} GB/s ({values['datasheet_source']})"
                 if values.get("datasheet_bytes_per_s") else f"datasheet {values['datasheet_source']}")
        notes.append(f"- {ceiling.device}, {ceiling.threads} thread(s): {measured}; {sheet}.")
    return notes


def energy_lines(parts: list) -> list[str]:
    """Joules per output token of each timed row, or why there is none, once per reason."""
    energies = [(part, part.data["energy"]) for part in _timed(parts) if part.data.get("energy")]
    reasons = sorted({e["unavailable"] for _, e in energies if "unavailable" in e})
    measured = [(part, e) for part, e in energies if e.get("joules_per_token") is not None]
    if not energies:
        return []
    lines = ["### Energy", "", *[f"Energy not measured: {reason}." for reason in reasons]]
    if measured:
        lines += ["Joules per output token: the device's energy counter read around each request in its worker, less "
                  "the idle draw read just before the point's rounds, over the request's batch x new_tokens (prefill "
                  "included); the interval is over its requests, every replicate process's pooled (not two-level).", ""]
        for part, e in measured:
            ci = e.get("joules_per_token_ci")
            lines.append(f"- {part.point} {part.slot}: {e['joules_per_token']:.3g} J/token"
                         + (f" [{ci[0]:.3g}-{ci[1]:.3g}]" if ci else "") + f", {e['average_power_w']:.0f} W "
                         f"({e['source']}; idle {e['idle_power_w']:.0f} W)")
    return lines + [""]


def generate_section(parts: list, ceilings: list[MemoryCeiling], environments: dict) -> Optional[ReportSection]:
    """The section from the generate parts and the memory ceilings (None: there are no parts)."""
    if not parts:
        return None
    lines = ["## Generate", "", "Every figure derives from one timestamp per generated step, taken by the same "
             "harness for every variant:", ""]
    lines += [f"- **{name}**: {text}" for name, text in DEFINITIONS.items()]
    lines += [f"- {OUTPUT_LENGTH}.", "- Speedups (x) are over eager fp32, paired by round (the median of the ratios of "
              "eager's request over the row's made in the same round), with a two-level 95% interval: the rounds both "
              "were timed in resampled together (a round's requests are made back to back by one replicate process of "
              "every decoder, the processes taking the rounds in turn), each side's processes on their own; the "
              "medians' ± likewise over the row's rounds and processes; accuracy: teacher-forced logits against eager "
              "fp32's at every position (top-1 counted where eager's top two differ by more than the margin), and the "
              "greedy prefix that matches eager's.", ""]
    by_scope = {ceiling.key: ceiling for ceiling in ceilings}
    notes = []
    for (environment, model, threads), rows in grouped(parts, lambda p: (p.environment, p.model, p.threads)).items():
        where = environment_name(environments.get(environment, {"id": environment}))
        lines += [f"### {model}, {threads} thread(s), {where}", "", process_line(rows), "", HEADER,
                  "|" + "---|" * HEADER.count(" | ") + "---|"]
        lines += [_row(part, by_scope.get((part.environment, part.data.get("device"), part.threads))) for part in rows]
        lines.append("")
        notes += [f"- {p.point} {p.slot}: {p.status}: {p.reason}" for p in rows if p.status is not Status.OK]
    lines += [BANDWIDTH_NOTE, "", *ceiling_notes(ceilings), ""]
    if notes:
        lines += ["Not timed:", "", *notes, ""]
    lines += cold_starts(parts) + energy_lines(parts) + memory_lines(parts)
    plots = [plot for plot in (steps_plot(parts, "generate_steps.png"), batch_plot(parts, "generate_batch.png"))
             if plot is not None]
    lines += [plot.markdown for plot in plots] + ([""] if plots else [])
    recommended = recommendations(parts)
    if recommended:
        lines += ["### What to ship", "", *[
            f"- {r['model']} t{r['threads']} {r['point']}: lowest TPOT {r['lowest_tpot']['variant']} "
            f"{r['lowest_tpot']['precision']} ({r['lowest_tpot']['tpot_ms']} ms); lowest TTFT "
            f"{r['lowest_ttft']['variant']} {r['lowest_ttft']['precision']} ({r['lowest_ttft']['ttft_ms']} ms)"
            for r in recommended], ""]
    return ReportSection("\n".join(lines), {"generate_recommendations": recommended}, tuple(plots))


def generate_summary(parts: list) -> list[str]:
    """The recommendation per point, for the command line."""
    recommended = recommendations(parts)
    return ["generate (accurate, lowest TPOT / lowest TTFT):",
            *[f"  {r['model']} {r['point']}: {r['lowest_tpot']['variant']} {r['lowest_tpot']['precision']} "
              f"{r['lowest_tpot']['tpot_ms']} ms/token; {r['lowest_ttft']['variant']} {r['lowest_ttft']['precision']} "
              f"{r['lowest_ttft']['ttft_ms']} ms to first token" for r in recommended]] if recommended else []
