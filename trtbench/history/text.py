"""The history as text: intervals and steps, each series' line (``trtbench history``), the stored runs, and every
point as CSV (the same bytes from SQLite and PostgreSQL: series then start order, shortest round-trip numbers)."""

from __future__ import annotations

import csv
import io
import json
from typing import Optional, Sequence

from trtbench.analysis.change_points import Step
from trtbench.core.stats import Interval
from trtbench.history.figures import RunRow
from trtbench.history.series import Series
from trtbench.history.store import Store

CSV_FIELDS = ("model", "model_hash", "variant", "options", "precision", "point", "threads", "knobs", "device",
              "machine", "figure", "run_id", "started_at", "label", "status", "value", "low", "high", "reason",
              "versions")


def interval_text(value: Optional[Interval]) -> str:
    """``10 [9.9, 10.1]``; the value alone for a figure without an interval (p99, accuracy); ``-`` for none."""
    if value is None:
        return "-"
    return f"{value.value:.4g}" if value.low == value.high == value.value else value.text(".4g", sep=", ")


def levels_text(before: Optional[Interval], after: Optional[Interval], changes: Sequence[str]) -> str:
    """``10 [9.9, 10.1] -> 11 [10.9, 11.1]; torch 2.13.0 -> 2.14.1`` (``no version changed`` where none did)."""
    return f"{interval_text(before)} -> {interval_text(after)}; {'; '.join(changes) or 'no version changed'}"


def step_text(series: Series, step: Step) -> str:
    """``+9.8% (regression) from run 3f2a... (2026-11-28T10:00:00, label): 10 [9.9, 10.1] -> 11 [10.9, 11.1]; ...``."""
    run = series.points[step.index].run
    label = f", {run.label}" if run.label else ""
    return (f"{step.change:+.1%} ({'regression' if series.worse(step) else 'improvement'}) from run "
            f"{run.run_id} ({run.started_at}{label}): {levels_text(step.before, step.after, step.what_changed)}")


def series_lines(series: list[Series]) -> list[str]:
    """Per series: its label, the latest value with its interval, a small trend, and each step found."""
    if not series:
        return ["no series match (trtbench history runs lists the stored runs)"]
    lines = []
    for one in series:
        latest, figure = one.latest, one.latest.figure
        value = interval_text(figure.value) if figure.value is not None else f"{figure.status}: {figure.reason}"
        lines.append(f"{one.key.label}: {value}  {one.trend()}  ({len(one.points)} run(s), latest "
                     f"{latest.run.run_id})")
        lines += [f"  step {step_text(one, step)}" for step in one.steps]
    steps = sum(len(one.steps) for one in series)
    lines.append(f"{len(series)} series, {steps} step(s)")
    return lines


def run_lines(runs: list[RunRow]) -> list[str]:
    """Each stored run: id, start, label, name, status, accepted, folder."""
    if not runs:
        return ["the history holds no run"]
    return [f"{r.run_id}  {r.started_at}  {r.label or '-'}  {r.name}  {r.status}"
            f"{'  accepted' if r.accepted else ''}  {r.source}" for r in runs]


def _number(value) -> str:
    return "" if value is None else repr(float(value))


def export_csv(store: Store) -> str:
    """Every point of every series, one CSV row each (see the module docstring)."""
    rows = []
    for point in store.points():
        run, key, figure = point.run, point.figure.key, point.figure
        rows.append([key.model, key.model_hash, key.variant, key.options, key.precision, key.point, str(key.threads),
                     key.knobs, key.device, key.machine, key.figure, run.run_id, run.started_at, run.label,
                     figure.status, *(_number(getattr(figure.value, name, None)) for name in ("value", "low", "high")),
                     figure.reason, json.dumps(dict(run.versions), sort_keys=True)])
    rows.sort(key=lambda row: (row[:11], row[12], row[11]))
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_FIELDS)
    writer.writerows(rows)
    return out.getvalue()
