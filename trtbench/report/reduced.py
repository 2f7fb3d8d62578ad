"""The reduced-precision section of the report: quantized rows' speed against accuracy, and the float fallbacks."""

from __future__ import annotations

import dataclasses
from typing import Optional

from trtbench.report.columns.speedup import speedup_text
from trtbench.core.precision import REFERENCE, is_quantized
from trtbench.core.record import Record
from trtbench.report.text import number_text
from trtbench.results.resultset import ResultSet
from trtbench.core.stats import Interval
from trtbench.core.status import Status

NOT_FASTER = "INT8 is not faster here"
NO_VNNI = "this CPU has no VNNI"


def over_same_variant(results: ResultSet, record: Record) -> Optional[Interval]:
    """The variant's speedup at its quantized precision over its own fp32, paired by their common rounds."""
    fp32 = results.get(dataclasses.replace(record.case, precision=REFERENCE), record.environment)
    return results.analysis.paired_speedup(fp32, record)


def _row(results: ResultSet, r: Record, *, first_of_variant: bool) -> list[str]:
    info = r.build.get("info", {}).get("int8", {})
    accuracy = r.accuracy or {}
    speedup = results.speedup(r)
    over_fp32 = over_same_variant(results, r)
    notes = []
    if r.status is not Status.OK:
        notes.append(f"{r.status}: {r.reason}" if first_of_variant else f"{r.status} (as above)")
    shown = over_fp32 or speedup  # the interval over the variant's own fp32, else over eager fp32
    if r.timed and shown is not None and shown.low <= 1.0:
        notes.append(NOT_FASTER)
    features = results.environments.get(r.environment, {}).get("cpu_int8") or {}
    if r.case.device == "cpu" and features.get("known", False) and not features.get("vnni", False):
        notes.append(NO_VNNI)
    if (info.get("calibration") or {}).get("source") == "random":
        notes.append("calibrated and judged on random inputs: not representative")
    cost = info.get("fallback_cost") or {}
    kept = ", ".join(info.get("fp32_modules") or [])
    if kept and cost:
        kept += f" ({cost['slowdown']:.2f}x the full INT8 latency)"
    top1 = ""
    if accuracy.get("top1") is not None:
        top1 = f"{accuracy['top1']:.3f} / {accuracy['top1_reference']:.3f}"
    return [r.case.label, r.case.point, speedup_text(speedup), speedup_text(over_fp32),
            number_text(accuracy.get("top1_agree"), 3), number_text(accuracy.get("top5_overlap"), 3),
            number_text(accuracy.get("sqnr_db"), 1), top1, kept or ("none" if info else ""), r.kernels_text,
            "; ".join(notes)]


def _quantized(results: ResultSet) -> list[Record]:
    return [r for r in results if is_quantized(r.case.precision) and r.case.variant != "eager"]


def speed_accuracy_plot(results: ResultSet, file_name: str, colors=None):
    """Per model, each quantized row's speedup over eager fp32 against its SQNR; None when none was timed."""
    from matplotlib.figure import Figure

    from trtbench.report.colors import legend_beside, marker, variant_colors
    from trtbench.report.plots import finish

    points = [(r, results.speedup(r)) for r in _quantized(results) if r.timed and (r.accuracy or {}).get("sqnr_db")]
    points = [(r, sp) for r, sp in points if sp is not None]
    if not points:
        return None
    models = list(dict.fromkeys(r.case.model for r, _ in points))
    colors = colors or variant_colors(results)
    fig = Figure(figsize=(8.4 * len(models), 4.8))
    for index, model in enumerate(models):
        ax = fig.add_subplot(1, len(models), index + 1)
        shown = [(r, sp) for r, sp in points if r.case.model == model]
        styles = colors.styles({f"{r.case.label} int8 {r.case.point}": r.case.label for r, _ in shown})
        for r, sp in shown:
            sqnr = r.accuracy["sqnr_db"]
            low, high = (sp.value - sp.low, sp.high - sp.value) if sp.low != float("-inf") else (0.0, 0.0)
            name = f"{r.case.label} int8 {r.case.point}"
            color, rank = styles[name]
            ax.errorbar([sqnr], [sp.value], yerr=[[low], [high]], fmt=marker(rank), color=color, capsize=3, label=name)
        for r in results:
            fp32 = results.speedup(r)
            reference = r.case.model == model and r.case.precision == REFERENCE and r.case.variant != "eager"
            if reference and r.timed and fp32:
                ax.axhline(fp32.value, linestyle=":", linewidth=1, color="grey")
                ax.annotate(f"{r.case.label} fp32 {r.case.point}", (0.01, fp32.value),
                            xycoords=("axes fraction", "data"), fontsize=7, color="grey")
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_xlabel("SQNR against eager fp32 (dB, higher is closer)")
        ax.set_ylabel("speedup over eager fp32 (95% CI)")
        ax.set_title(f"Speed vs accuracy: {model}")
        legend_beside(ax, fontsize=7)
    return finish(fig, file_name, caption="speed vs accuracy")


def _fallback_row(r: Record) -> list[str]:
    facts = r.build["info"]["fp32_fallback"]
    cost = facts.get("fallback_cost") or {}
    kept = ", ".join(facts.get("fp32_modules") or []) or "none"
    slowdown = f"{cost['slowdown']:.2f}x" if cost.get("slowdown") is not None else ""
    check = "ok" if (r.accuracy or {}).get("ok") else "FAIL"
    check = check if r.status is Status.OK else f"{r.status}: {r.reason}"
    notes = facts.get("missed") or f"full {r.case.precision}: {facts.get('full_accuracy', '')}"
    return [r.case.label, r.case.precision, r.case.point, kept, slowdown, check, r.kernels_text, notes]


def float_fallback_markdown(results: ResultSet) -> str:
    """The fp16 and bf16 rows whose accuracy fallback ran (empty when none did)."""
    rows = [r for r in results if not is_quantized(r.case.precision) and r.build.get("info", {}).get("fp32_fallback")]
    if not rows:
        return ""
    parts = ["## Layers kept in fp32 (fp16, bf16)", "",
             "Where eager at a float reduced precision missed its tolerance against eager fp32, the modules with the "
             "largest own error were kept in fp32, one more at a time (at most calibration.max_fp32_layers), in the "
             "precision's model copy that every variant builds from. Cost: the latency with them in fp32 over the "
             "full reduced-precision build's, timed interleaved on one point at build time. Kernels: the precision "
             "the row's conv and matmul kernels ran, as its runtime reported it (openvino: how many of its kept nodes "
             "ran f32).", "",
             "| variant | precision | point | kept in fp32 | cost (x full) | check | kernels | notes |",
             "|---|---|---|---|---|---|---|---|"]
    parts += ["| " + " | ".join(c.replace("|", "/") for c in _fallback_row(r)) + " |" for r in rows]
    return "\n".join(parts + [""])


def reduced_precision_markdown(results: ResultSet, plots: list | None = None) -> str:
    """The section with its ``plots`` (empty when no record is quantized and no fp16 or bf16 fallback ran)."""
    quantized = _quantized(results)
    if not quantized:
        return float_fallback_markdown(results)
    parts = ["## Speed vs accuracy (INT8)", "", *[plot.markdown for plot in plots or []], "",
             "Speedup over eager fp32 and over the same variant at fp32, each timed in the same interleaved rounds "
             "(95% CI of the paired rounds). Accuracy against eager fp32 over the evaluation samples: top-1 agreement, "
             "top-5 overlap, SQNR (dB, the lowest over outputs), and top-1 accuracy of the build / eager fp32 where "
             "the samples have labels. Layers kept in fp32: the accuracy fallback's, with what they cost in speed. "
             "Kernels: the precision the row's conv and matmul kernels ran, as its runtime reported it.", ""]
    for model in dict.fromkeys(r.case.model for r in quantized):
        rows = [r for r in quantized if r.case.model == model]
        parts += [f"### {model}", "",
                  "| variant | point | vs eager fp32 | vs same variant fp32 | top-1 agree | top-5 overlap | SQNR dB | "
                  "top-1 (int8 / fp32) | kept in fp32 | kernels | notes |", "|---" * 11 + "|"]
        seen: set[str] = set()
        for r in rows:
            first = r.case.label not in seen
            seen.add(r.case.label)
            cells = _row(results, r, first_of_variant=first)
            parts.append("| " + " | ".join(c.replace("|", "/") for c in cells) + " |")
        parts.append("")
    floats = float_fallback_markdown(results)
    return "\n".join(parts + ([floats] if floats else []))
