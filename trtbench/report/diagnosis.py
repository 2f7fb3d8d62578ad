"""``trtbench diagnose``'s report: a table per diagnosis, the named layer, a figure per precision."""

from __future__ import annotations

import math
from typing import Optional, Sequence

from matplotlib.figure import Figure

from trtbench.core.status import DiagnosisStatus
from trtbench.diagnose.floor import OUTLIER_DB
from trtbench.diagnose.harness import Diagnosis
from trtbench.report.colors import PALETTE
from trtbench.report.plots import finish, label_axes
from trtbench.report.section import Plot, ReportSection

FLOOR_DB = -10.0  # where the figure draws an SQNR of -inf (not finite)


def _db(value: Optional[float]) -> str:
    if value is None:
        return "n/a"
    return f"{value:.1f}" if math.isfinite(value) else ("exact" if value > 0 else "not finite")


def _rel(value: Optional[float]) -> str:
    return "n/a" if value is None else (f"{value:.2e}" if math.isfinite(value) else "inf")


def diagnosis_table(diagnosis: Diagnosis) -> str:
    """One diagnosis as Markdown: its sentence, its builds and its layers' table."""
    subject, taps = diagnosis.subject, diagnosis.taps
    lines = [f"### {subject.variant} at {subject.precision}, point {subject.point}", "", diagnosis.sentence(), ""]
    if diagnosis.status in (DiagnosisStatus.AGREES, DiagnosisStatus.DIVERGES, DiagnosisStatus.STOPPED):
        lines.append(f"Builds: {diagnosis.builds} made, {diagnosis.builds_announced} announced"
                     + (f" ({diagnosis.reason})" if diagnosis.status == DiagnosisStatus.STOPPED else "") + ".")
    if diagnosis.kernels is not None:
        lines.append(f"Kernels of the whole build ({diagnosis.kernels.source}): {diagnosis.kernels.text}.")
    if taps.reason:
        lines.append(f"No taps: {taps.reason}; the splices alone localise.")
    if taps.line_db is not None:
        median = "n/a" if taps.median_own_db is None else f"{taps.median_own_db:.1f} dB"
        lines.append(f"A layer stands out below {taps.line_db:.1f} dB own SQNR and {OUTLIER_DB:g} dB under the "
                     f"other layers' median (all layers': {median}).")
    if diagnosis.layers:
        lines += ["", "| # | layer | op | own SQNR dB | carried SQNR dB | max rel err |", "|---|---|---|---|---|---|"]
        for i, error in enumerate(diagnosis.layers):
            mark = " **(named)**" if error.path == diagnosis.named else ""
            lines.append(f"| {i} | `{error.path}`{mark} | {error.op} | {_db(error.own_sqnr_db)} | "
                         f"{_db(error.carried_sqnr_db)} | {_rel(error.max_rel_err)} |")
    return "\n".join(lines) + "\n"


def sqnr_plot(precision: str, diagnoses: Sequence[Diagnosis]) -> Optional[Plot]:
    """Own SQNR by depth at ``precision``, a line per variant, with the precision's line; None with nothing tapped."""
    tapped = [d for d in diagnoses if d.subject.precision == precision and d.layers]
    if not tapped:
        return None
    variants = dict.fromkeys(d.subject.variant for d in tapped)
    colors = {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(variants)}
    fig = Figure(figsize=(8, 4))
    ax = fig.add_subplot()
    for diagnosis in tapped:
        points = [(i, FLOOR_DB if e.own_sqnr_db == -math.inf else e.own_sqnr_db)
                  for i, e in enumerate(diagnosis.layers)
                  if e.own_sqnr_db is not None and e.own_sqnr_db != math.inf]
        variant = diagnosis.subject.variant
        ax.plot([p[0] for p in points], [p[1] for p in points], marker=".", label=variant, color=colors[variant],
                gid=f"own|{variant}")
    line = tapped[0].taps.line_db
    if line is not None:
        ax.axhline(line, color="black", linestyle="--", linewidth=1, label=f"{precision} line ({line:.0f} dB)")
    label_axes(ax, "layer (graph order)", "own SQNR (dB)", f"Where {precision} diverges: each layer's own error")
    return finish(fig, f"diagnose-sqnr-{precision}.png", legend=ax, caption=f"own SQNR by depth at {precision}")


def diagnosis_section(diagnoses: Sequence[Diagnosis]) -> ReportSection:
    """Every diagnosis's table, under one figure per precision."""
    precisions = dict.fromkeys(d.subject.precision for d in diagnoses)
    plots = [p for p in (sqnr_plot(precision, diagnoses) for precision in precisions) if p is not None]
    lines = ["## Where reduced precision diverges", ""]
    lines += [f"{plot.markdown}\n" for plot in plots]
    lines += [diagnosis_table(d) for d in diagnoses]
    return ReportSection("\n".join(lines), {"diagnoses": [d.to_dict() for d in diagnoses]}, tuple(plots))
