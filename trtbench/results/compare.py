"""Noise-aware comparison of two runs: latency rows, generate rows, served peaks (docs/comparing.md)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np

from trtbench.analysis.records import Analysis, runs_ratio
from trtbench.core.case import Case
from trtbench.core.stats import BlockSeries, Interval, pooled_between_variance
from trtbench.results.resultset import ResultSet


@dataclass(frozen=True)
class Change:
    """One case of the new run against the same case of the baseline."""

    case: Case
    base_ms: Optional[float]
    new_ms: Optional[float]
    speedup: Optional[Interval]  # base median / new median with its 95% CI: above 1, the new run is faster
    verdict: str  # faster | slower | no change | within noise | not comparable: <why>
    processes: str = ""  # the replicate processes that timed it in each run: "3/3"


def _verdict(speedup: Interval, threshold: float) -> str:
    """The verdict on a speedup's interval: faster, slower, no change or within noise (docs/comparing.md)."""
    faster = 1 / (1 - threshold) if threshold < 1 else math.inf
    slower = 1 / (1 + threshold)
    if speedup.low > faster:
        return "faster"
    if speedup.high < slower:
        return "slower"
    if speedup.low >= slower and speedup.high <= faster:
        return "no change"
    return "within noise"


def compare_runs(base: ResultSet, new: ResultSet, threshold: float = 0.05) -> list[Change]:
    """Compare every record of ``new`` with the baseline's record of the same case (any environment)."""
    by_case = {record.case: record for record in base}
    between = Analysis([*base, *new]).between_variance()
    changes = []
    for record in new:
        old = by_case.get(record.case)
        why = _why_not(old, old is not None and old.timed and record.timed, "no timings in one of the runs")
        if why:
            changes.append(Change(record.case, None, None, None, why))
            continue
        ratio = runs_ratio(old.samples_ms, record.samples_ms, old.block_series, record.block_series, between)
        changes.append(Change(record.case, float(np.median(old.samples_ms)), float(np.median(record.samples_ms)),
                              ratio, _verdict(ratio, threshold), f"{old.process_count}/{record.process_count}"))
    return changes


def _why_not(old, both_timed: bool, untimed: str) -> str:
    """Why a row of the new run is not comparable (``untimed``: where either run has no timings); "" where it is."""
    if old is None:
        return "not comparable: not in the baseline"
    return "" if both_timed else f"not comparable: {untimed}"


def regime_lines(name: str, results: ResultSet) -> list[str]:
    """One line per point of ``results`` whose rounds fell into more than one of the machine's regimes."""
    out = []
    for records, regimes in results.analysis.points():
        if len(regimes) > 1:
            c = records[0].case
            out.append(f"{name}: {c.model} t{c.threads} {c.point} ({c.shapes}) ran in {len(regimes)} regimes: "
                       + "; ".join(r.text() for r in regimes))
    return out


@dataclass(frozen=True)
class GenerateChange:
    """One time (``metric``) of a generate row against the baseline's, as a :class:`Change`."""

    model: str
    point: str
    decoder: str
    precision: str
    metric: str
    speedup: Optional[Interval]
    verdict: str
    base_ms: Optional[float] = None
    new_ms: Optional[float] = None


GENERATE_TIMES = ("ttft_ms", "tpot_ms", "e2e_ms")


def _generate_key(row) -> tuple:
    return (row.model, row.threads, row.point, row.decoder, row.precision)


def request_series(requests: dict, metric: str) -> BlockSeries:
    """A generate row's requests of ``metric`` as blocks, with their processes and rounds."""
    values = requests[metric]
    return BlockSeries(tuple(values), tuple(requests.get("process", [0] * len(values))),
                       tuple(requests.get("round", range(len(values)))))


def compare_generate(base: ResultSet, new: ResultSet, threshold: float = 0.05) -> list[GenerateChange]:
    """Compare every generate row of ``new`` with the baseline's same row, per time, unpaired."""
    by_key = {_generate_key(row): row for row in base.parts("generate")}
    timed = [row.data["requests"] for row in [*base.parts("generate"), *new.parts("generate")]
             if row.data.get("requests")]
    between = {metric: pooled_between_variance([request_series(r, metric) for r in timed]) for metric in GENERATE_TIMES}
    changes = []
    for row in new.parts("generate"):
        old = by_key.get(_generate_key(row))
        head = (row.model, row.point, row.decoder, row.precision)
        why = _why_not(old, bool(old and old.data.get("requests") and row.data.get("requests")),
                       "no timed requests in one of the runs")
        if why:
            changes.append(GenerateChange(*head, "all", None, why))
            continue
        for metric in GENERATE_TIMES:
            calls = (old.data["requests"][metric], row.data["requests"][metric])
            series = (request_series(old.data["requests"], metric), request_series(row.data["requests"], metric))
            ratio = runs_ratio(*calls, *series, between[metric])
            changes.append(GenerateChange(*head, metric, ratio, _verdict(ratio, threshold), float(np.median(calls[0])),
                                          float(np.median(calls[1]))))
    return changes


def _row(head: str, c) -> str:
    """A table row: ``head`` (what is compared), then a change's times, speedup, interval and verdict."""
    speedup = c.speedup
    if speedup is None:
        return f"{head}  |  |  |  | {c.verdict} |"
    return (f"{head} {c.base_ms:.3f} | {c.new_ms:.3f} | {speedup.value:.3f}x | {speedup.low:.3f}-{speedup.high:.3f} "
            f"| {c.verdict} |")


def _table(columns: str, rows: list[str]) -> str:
    """A Markdown table of ``columns`` (``a | b``) over ``rows``."""
    return "\n".join([f"| {columns} |", "|" + "---|" * (columns.count("|") + 1), *rows]) + "\n"


def generate_changes_table(changes: list[GenerateChange]) -> str:
    """The generate comparison as a Markdown table: one row per time of each generate row of the new run."""
    return _table("model | point | decoder | precision | time | base ms | new ms | speedup (base/new) | 95% CI "
                  "| verdict",
                  [_row(f"| {c.model} | {c.point} | {c.decoder} | {c.precision} | {c.metric} |", c) for c in changes])


def changes_table(changes: list[Change]) -> str:
    """The comparison as a Markdown table: the new run's speedup over the baseline (base ms / new ms)."""
    rows = [_row(f"| {c.case.model} | {c.case.label} | {c.case.precision} | {c.case.threads} | {c.case.point} "
                 f"({c.case.shapes}) | {c.processes} |", c) for c in changes]
    return _table("model | variant | precision | threads | point | processes (base/new) | base ms | new ms | speedup "
                  "(base/new) | 95% CI, each run's processes x rounds | verdict", rows)


@dataclass(frozen=True)
class ServingChange:
    """A served case's peak and interval in both runs at one serving configuration, and the verdict."""

    label: str
    base: Optional[Interval]
    new: Optional[Interval]
    rule: str
    verdict: str


def _serving_key(case_key: str, result) -> tuple:
    return (case_key, result.workers, result.threads, str(result.batching), result.bound_ms, result.percentile)


def compare_serving(base: ResultSet, new: ResultSet) -> list[ServingChange]:
    """Compare every served peak of ``new`` with the baseline's at the same case and serving configuration."""
    old = {_serving_key(part.case_key, r): r for part in base.parts("served") for r in part.results if r.peaks}
    cases = {record.key[0]: record.case for record in new}
    changes = []
    for part in new.parts("served"):
        for result in (r for r in part.results if r.peaks):
            case = cases.get(part.case_key)
            label = (f"{case.model} {case.label} {case.precision}" if case else part.case_key) + f" {result.label}"
            before = old.get(_serving_key(part.case_key, result))
            if before is None or before.peak_rule != result.peak_rule:
                why = "not in the baseline" if before is None else (f"peaks found by different rules "
                                                                     f"({before.peak_rule}, {result.peak_rule})")
                changes.append(ServingChange(label, None, result.peak_interval, result.peak_rule,
                                             f"not comparable: {why}"))
                continue
            was, now = before.peak_interval, result.peak_interval
            verdict = "higher" if now.low > was.high else "lower" if now.high < was.low else "intervals overlap"
            changes.append(ServingChange(label, was, now, result.peak_rule, verdict))
    return changes


def serving_changes_table(changes: list[ServingChange]) -> str:
    """The serving comparison as a Markdown table: each served peak of the new run beside the baseline's."""
    def peak(value: Optional[Interval]) -> str:
        return "" if value is None else value.text(".1f")
    return _table("served | peak rule | base peak QPS [interval] | new peak QPS [interval] | verdict",
                  [f"| {c.label} | {c.rule} | {peak(c.base)} | {peak(c.new)} | {c.verdict} |" for c in changes])
