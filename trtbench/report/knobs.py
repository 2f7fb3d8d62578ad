"""The deployment-knob section of the report: each variant under each allocator state (``sweep.allocator``),
with what it buys over eager in that state and what the state buys the variant, and the knob recommended
where it changes the answer.

Within a state, speedups are paired (eager and the variant were timed in the same interleaved rounds).
Across states they are not: each state is a build group of its own, timed after the other, so the
comparison of a variant with itself under ``default`` resamples each side's rounds on its own
(:func:`trtbench.core.stats.bootstrap_median_ratio` unpaired), and a knob is recommended only where that
interval excludes 1.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from trtbench.core.record import Record
from trtbench.core.stats import Interval, bootstrap_median_ratio
from trtbench.report.columns.speedup import speedup_text
from trtbench.report.text import ms_text
from trtbench.results.resultset import ResultSet

TEXT = ("Each variant under each allocator state its worker started in (`sweep.allocator`; "
        "`benchmark.allocator` documents the states). Over eager: paired, against eager under the same state, "
        "timed in the same rounds. Over itself under default: the variant's default-state median over this "
        "state's, 95% CI from each state's rounds resampled on their own (the states were timed one after the "
        "other, so the machine's drift between them is not cancelled).")


def _state_speedup(base: Record, this: Record) -> Optional[Interval]:
    """``base``'s median over ``this``'s, unpaired (timed in different rounds)."""
    if not (base.timed and this.timed):
        return None
    value = base.stats.median / this.stats.median
    base_medians, these = [np.median(r) for r in base.rounds], [np.median(r) for r in this.rounds]
    if min(len(base_medians), len(these)) < 3:
        return Interval(value, -np.inf, np.inf)
    low, high = bootstrap_median_ratio(base_medians, these, paired=False)
    return Interval(value, min(low, value), max(high, value))


def _point_key(record: Record) -> tuple:
    c = record.case
    return (record.environment, c.model, c.precision, c.threads, c.point, c.input_shapes)


def knob_markdown(results: ResultSet) -> str:
    """The section; empty unless the records were timed under more than one allocator state."""
    records = [r for r in results if r.timed]
    if len({r.case.allocator for r in records}) < 2:
        return ""
    lines = ["## Deployment knobs: allocator", "", TEXT, "",
             "| model | precision | threads | point | variant | allocator | median ms | over eager (same state) | "
             "over itself under default |", "|---|---|---|---|---|---|---|---|---|"]
    advice: list[str] = []
    points: dict[tuple, list[Record]] = {}
    for record in records:
        points.setdefault(_point_key(record), []).append(record)
    for (_, model, precision, threads, point, _), at_point in points.items():
        by_label: dict[str, dict[str, Record]] = {}
        for record in at_point:
            by_label.setdefault(record.case.label, {})[record.case.allocator] = record
        for label, states in by_label.items():
            default = states.get("default")
            for state, record in states.items():
                over_default = _state_speedup(default, record) if default is not None and state != "default" else None
                lines.append(f"| {model} | {precision} | {threads} | {point} | {label} | {state} | "
                             f"{ms_text(record.stats.median)} | {speedup_text(results.speedup(record))} | "
                             f"{speedup_text(over_default)} |")
            advice += _advice(results, label, point, states)
        advice += _fastest_changes(model, point, at_point)
    return "\n".join(lines + [""] + ([*advice, ""] if advice else []))


def _fastest_changes(model: str, point: str, at_point: list[Record]) -> list[str]:
    """A line where the fastest variant that passed its check differs from one allocator state to another."""
    fastest: dict[str, Record] = {}
    for record in at_point:
        if record.accuracy is not None and record.accuracy.get("ok"):
            best = fastest.get(record.case.allocator)
            if best is None or record.stats.median < best.stats.median:
                fastest[record.case.allocator] = record
    if len({r.case.label for r in fastest.values()}) < 2:
        return []
    return [f"- {model} at {point}: the fastest variant depends on the allocator: "
            + "; ".join(f"{r.case.label} under {state} ({ms_text(r.stats.median)} ms)" for state, r in fastest.items())
            + "."]


def _advice(results: ResultSet, label: str, point: str, states: dict[str, Record]) -> list[str]:
    """A line recommending the state that makes ``label`` faster than under default beyond the noise."""
    default = states.get("default")
    if default is None:
        return []
    gains = {state: gain for state, record in states.items() if state != "default"
             and (gain := _state_speedup(default, record)) is not None and gain.low > 1}
    if not gains:
        return []
    best = max(gains, key=lambda state: gains[state].value)
    over_eager = [f"{speedup_text(results.speedup(states[s]))} eager under {s}"
                  for s in ("default", best) if results.speedup(states[s]) is not None]
    return [f"- **{label} at {point}: set allocator {best}**: {gains[best].value:.2f}x its speed under default "
            f"({gains[best].low:.2f}-{gains[best].high:.2f})" + (f"; {' and '.join(over_eager)}" if over_eager else "")
            + "."]
