"""The deployment-knob section of the report: each variant's speedups under each knob setting, and the pick."""

from __future__ import annotations

from trtbench.core.record import Record
from trtbench.report.columns.speedup import speedup_text
from trtbench.report.rows import grouped
from trtbench.report.text import ms_text
from trtbench.results.resultset import ResultSet

TEXT = ("Each variant under each setting of the deployment knobs its worker started with (`sweep.allocator`, "
        "`sweep.openmp`, `sweep.binding`; docs/measuring.md). Over eager: paired, against eager under the same "
        "knobs, timed in the same rounds. Over itself under the defaults: the variant's median under the defaults "
        "over its median under these knobs, 95% CI from each setting's rounds and processes resampled on their own "
        "(the settings were timed one after the other in processes of their own, so the machine's drift between "
        "them is not cancelled).")


def _point_key(record: Record) -> tuple:
    c = record.case
    return (record.environment, c.model, c.precision, c.threads, c.point, c.input_shapes)


def knob_markdown(results: ResultSet) -> str:
    """The section; empty unless the records were timed under more than one setting of the knobs."""
    records = [r for r in results if r.timed]
    if len({r.case.knobs for r in records}) < 2:
        return ""
    lines = ["## Deployment knobs", "", TEXT, "",
             "| model | precision | threads | point | variant | knobs | median ms | over eager (same knobs) | "
             "over itself under the defaults |", "|---|---|---|---|---|---|---|---|---|"]
    advice: list[str] = []
    for (_, model, precision, threads, point, _), at_point in grouped(records, _point_key).items():
        by_label: dict[str, dict[str, Record]] = {}
        for record in at_point:
            by_label.setdefault(record.case.label, {})[record.case.knobs] = record
        for label, states in by_label.items():
            default = states.get("")
            for state, record in states.items():
                over_default = (results.analysis.unpaired_speedup(default, record)
                                if default is not None and state else None)
                lines.append(f"| {model} | {precision} | {threads} | {point} | {label} | {state or 'defaults'} | "
                             f"{ms_text(record.stats.median)} | {speedup_text(results.speedup(record))} | "
                             f"{speedup_text(over_default)} |")
            advice += _advice(results, label, point, states)
        advice += _fastest_changes(model, point, at_point)
    return "\n".join(lines + [""] + ([*advice, ""] if advice else []))


def _fastest_changes(model: str, point: str, at_point: list[Record]) -> list[str]:
    """A line where the fastest variant that passed its check differs from one setting of the knobs to another."""
    fastest: dict[str, Record] = {}
    for record in at_point:
        if record.accuracy is not None and record.accuracy.get("ok"):
            best = fastest.get(record.case.knobs)
            if best is None or record.stats.median < best.stats.median:
                fastest[record.case.knobs] = record
    if len({r.case.label for r in fastest.values()}) < 2:
        return []
    return [f"- {model} at {point}: the fastest variant depends on the knobs: "
            + "; ".join(f"{r.case.label} under {state or 'the defaults'} ({ms_text(r.stats.median)} ms)"
                        for state, r in fastest.items())
            + "."]


def _advice(results: ResultSet, label: str, point: str, states: dict[str, Record]) -> list[str]:
    """A line recommending the setting that makes ``label`` faster than under the defaults beyond the noise."""
    default = states.get("")
    if default is None:
        return []
    gains = {state: gain for state, record in states.items() if state
             and (gain := results.analysis.unpaired_speedup(default, record)) is not None and gain.low > 1}
    if not gains:
        return []
    best = max(gains, key=lambda state: gains[state].value)
    over_eager = [f"{speedup_text(results.speedup(states[s]))} eager under {s or 'the defaults'}"
                  for s in ("", best) if results.speedup(states[s]) is not None]
    return [f"- **{label} at {point}: set {best}**: {gains[best].value:.2f}x its speed under the defaults "
            f"({gains[best].low:.2f}-{gains[best].high:.2f})" + (f"; {' and '.join(over_eager)}" if over_eager else "")
            + "."]
