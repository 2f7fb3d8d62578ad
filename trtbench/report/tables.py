"""Speedup tables for reports: Markdown, CSV and the terminal summary."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from operator import attrgetter
from typing import Optional

from trtbench.analysis.records import processes_disagree
from trtbench.core.allocator import threshold_text
from trtbench.core.env import environment_name
from trtbench.measure.interference import interference_check
from trtbench.measure.trackers.launch import LAUNCH_BOUND_SHARE, launch_bound_share
from trtbench.report.answer import race_notes
from trtbench.report.columns import ColumnSet, registered
from trtbench.report.columns.flops import peak_notes
from trtbench.report.columns.energy import energy_notes
from trtbench.report.columns.latency import own_stream_note
from trtbench.report.columns.processes import demand_notes, disagreement_notes, turn_notes
from trtbench.report.deprecations import DEPRECATED_MARK, deprecation_notes
from trtbench.report.regimes import regime_notes
from trtbench.core.record import Record
from trtbench.report.rows import Row, grouped, rows
from trtbench.report.text import number_text
from trtbench.results.resultset import ResultSet
from trtbench.results.successors import deprecations_of
from trtbench.core.status import Status

FASTEST_MARK = "*"
REFAULTING = 1000  # minor page faults per timed call (4 MiB of fresh pages) that the notes name a row for
IDENTITY_FIELDS = ("environment", "model", "variant", "options", "precision", "threads", "device", "point",
                   "input_shapes", "batch", "status", "reason")
# the table's identity columns before the point, each with what a record's value is (None: always shown)
IDENTITY_COLUMNS = (("environment", "environment"), ("model", "case.model"), ("variant", None),
                    ("precision", "case.precision"), ("threads", "case.threads"), ("knobs", "case.knobs"))


def csv_columns() -> tuple[str, ...]:
    """The CSV header: the row's identity, every registered column set's fields, and the fastest mark."""
    return IDENTITY_FIELDS + tuple(f for column_set in registered() for f in column_set.fields) + ("fastest",)


def _mib(nbytes: Optional[int]) -> str:
    return "" if nbytes is None else f"{nbytes / 2**20:.0f}"


def deployment_table(results: ResultSet) -> str:
    """Per variant build: build time, compile on first call, cold start of the saved file, peak memory."""
    lines = ["| model | variant | precision | threads | build s | first call s | artifact load s | "
             "cold first call ms | peak MiB build | peak MiB run |", "|---|---|---|---|---|---|---|---|---|---|"]
    builds = grouped((r for r in results if r.status is Status.OK),
                     lambda r: (r.environment, r.case.model, r.case.label, r.case.precision, r.case.threads))
    for (_, model, label, precision, threads), records in builds.items():
        first = records[0]
        cold = first.metrics.get("cold_start") or []
        run_peaks = [p for p in (x.metrics.get("peak_memory", {}).get("peak_bytes") for x in records) if p]
        cells = [model, label, precision, str(threads), number_text(first.build.get("build_s"), 2),
                 number_text(first.build.get("info", {}).get("first_call_s"), 2),
                 ", ".join(number_text(x.get("load_s"), 2) for x in cold if x.get("load_s") is not None),
                 ", ".join(number_text(x.get("first_call_ms"), 1) for x in cold if x.get("first_call_ms") is not None),
                 _mib(first.build.get("peak_memory", {}).get("peak_bytes")),
                 _mib(max(run_peaks)) if run_peaks else ""]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n" if builds else ""


def _knobs_text(facts: dict) -> str:
    """The deployment knobs a record's process started with (allocator, OpenMP runtime, bound cores)."""
    if facts.get("method") == "in_process":
        return "as this process's"
    text = f"allocator {facts.get('allocator', 'unstated')}"
    if "mmap_threshold_bytes" in facts:
        text += f" (mmap threshold {threshold_text(facts['mmap_threshold_bytes'])})"
    if facts.get("openmp", "default") != "default":
        text += f", OpenMP {facts['openmp']}"
    if facts.get("bound_cpus"):
        text += f", bound to CPUs {','.join(map(str, facts['bound_cpus']))}"
    return text


def isolation_table(results: ResultSet) -> str:
    """Per variant build: where it was timed, its threads and spinning, and what settling cost."""
    lines = ["| model | variant | precision | method | process | knobs | threads (intra/inter, runtime) | spinning | "
             "settle ms (CPU ms) | CPU between blocks ms | page faults / call | switch-in call | peak RSS MiB |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    seen = set()
    for r in results:
        facts = r.metrics.get("isolation")
        c = r.case
        key = (r.environment, c.model, c.label, c.precision, c.threads, c.knobs)
        if not facts or key in seen:
            continue
        seen.add(key)
        threads = f"{facts.get('intra_op_threads')}/{facts.get('inter_op_threads')}"
        if facts.get("runtime_threads") is not None:
            threads += f", {facts['runtime_threads']}"
        spinning = facts.get("spinning") or f"OpenMP (OMP_WAIT_POLICY {facts.get('omp_wait_policy')})"
        # the median switch-in call against the median timed call, e.g. ``+6%`` ("" where blocks had none)
        switch_in, median = facts.get("switch_in_ms_median"), r.stats.median if r.stats else 0
        cells = [c.model, c.label, c.precision, facts.get("method", ""),
                 "this one" if facts.get("method") == "in_process" else f"worker pid {facts.get('pid')}",
                 _knobs_text(facts), threads, spinning,
                 f"{number_text(facts.get('settle_ms_median'), 1)} "
                 f"({number_text(facts.get('settle_cpu_ms_median'), 1)})",
                 number_text(facts.get("cpu_between_blocks_ms_median"), 2),
                 number_text(facts.get("minor_faults_per_call_median"), 0),
                 f"{switch_in / median - 1:+.0%}" if switch_in is not None and median > 0 else "",
                 number_text(facts.get("peak_rss_mb"), 0)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n" if seen else ""


def bf16_mode(record: Record) -> Optional[str]:
    """``native`` or ``emulated``: how the record's bf16 build computed (its build info), None where it says nothing."""
    text = (record.build.get("info") or {}).get("bf16")
    return text.split(" ", 1)[0] if text else None


def _cells(row: Row, columns: list[str], column_sets: list[ColumnSet], results: ResultSet,
           table_rows: list[Row]) -> list[str]:
    r, c = row.record, row.record.case
    mode = bf16_mode(r)  # the precision shows how bf16 computed where the build says (``bf16 (emulated)``)
    deprecated = any(d.successors for d in deprecations_of(r))
    values = {
        "environment": environment_name(results.environments.get(r.environment, {"id": r.environment})),
        "model": c.model, "variant": c.label + (f" {FASTEST_MARK}" if row.fastest else ""),
        "precision": f"{c.precision} ({mode})" if mode else c.precision, "threads": str(c.threads),
        "knobs": c.knobs or "defaults", "point": f"{c.point} ({c.shapes})",
        "status": (f"{r.status}, CHECK FAILED" if r.accuracy_failed else str(r.status))
        + (f", {DEPRECATED_MARK}" if deprecated else ""),
        **{column.heading(table_rows): column.cell(row) for column_set in column_sets for column in column_set.columns},
    }
    return [values[col] for col in columns]


def failed_part_notes(results: ResultSet) -> list[str]:
    """One line per failed part other than a record, naming the case it joins where it joins one."""
    out = []
    for part in results.other_parts():
        if part.fails_run:
            record = results.record_of(part.key) if part.JOINS_RECORD else None
            where = f"{record.case.model} {record.case.label} {record.case.precision} " if record else ""
            out.append(where + getattr(part, "failure_note", f"{part.KIND}: failed"))
    return out


def notes(results: ResultSet, table_rows: list[Row]) -> list[str]:
    """Reasons for rows that are not ok (deduplicated), and what limited the timing (``table_rows``: :func:`rows`)."""
    out = list(dict.fromkeys(f"{r.case.model} {r.case.label} {r.case.precision}: {r.status}: {r.reason}"
                             for r in results if r.status is not Status.OK and r.reason))
    timed = [r for r in results if r.timed]
    if any(r.stats.noisy for r in timed):
        out.append("noisy rows (IQR/median above 10%) have wide intervals; compare them with care.")
    capped = [f"{r.case.label} {r.case.precision} {r.case.point}" for r in timed if r.stopped_by == "max_time_s"]
    if capped:
        out.append(f"limited by time: max_time_s ended timing before the median's 95% CI reached target_rel_ci for: "
                   f"{', '.join(capped)}; raise benchmark.max_time_s for tighter medians.")
    for r in timed:
        check = interference_check(r)
        if check is not None and check.disturbed:
            out.append(f"interference at {r.case.model} {r.case.precision} {r.case.point}: {check.text()}; "
                       f"speedups there may not be what each runtime gives alone.")
    refaulting = [f"{r.case.label} {r.case.precision} {r.case.point} ({faults:.0f}/call)" for r in timed
                  if (faults := (r.metrics.get("isolation") or {}).get("minor_faults_per_call_median") or 0)
                  >= REFAULTING]
    if refaulting:
        out.append(f"page faults on every call for: {', '.join(refaulting)}: their process's allocator handed its "
                   "buffers back to the OS after each call, so their times, and speedups over them, include faulting "
                   "those pages in again; a deployment with benchmark.allocator tuned (or jemalloc/tcmalloc) does not "
                   "pay that.")
    switching = [f"{r.case.label} {r.case.precision} {r.case.point} ({low:.0f}-{high:.0f}/call)" for r in timed
                 if (spread := (r.metrics.get("isolation") or {}).get("minor_faults_per_call_range"))
                 and (high := spread[1]) >= REFAULTING and (low := spread[0]) <= high / 2]
    if switching:
        out.append(f"allocator state changed during timing for: {', '.join(switching)}: some blocks faulted their "
                   "pages in on every call and others on some calls or none, so the median mixes two speeds; under "
                   "glibc's default state a process lands in either (a fresh deployment too, by its heap's layout), "
                   "and benchmark.allocator tuned, jemalloc or tcmalloc hold one.")
    launch_bound = [f"{r.case.label} {r.case.precision} {r.case.point} ({share:.0%})" for r in timed
                    if (share := launch_bound_share(r.metrics)) is not None]
    if launch_bound:
        out.append(f"launch-bound: {', '.join(launch_bound)}: each call returned to the host only after that share of "
                   f"its synchronised time (at least {LAUNCH_BOUND_SHARE:.0%}), so the CPU launching kernels, not the "
                   "GPU, sets its time, and a faster kernel or precision barely shows; replay a CUDA graph "
                   "(cuda_graphs: true, or compiled with mode: reduce-overhead) or raise the batch.")
    out += disagreement_notes([r for r in timed if processes_disagree(r)]) + turn_notes(timed) + demand_notes(timed)
    out += race_notes(timed)
    out += regime_notes(results) + deprecation_notes(results)
    unsettled = sorted({r.case.label for r in timed if (r.metrics.get("isolation") or {}).get("unsettled_blocks")})
    if unsettled:
        out.append(f"threads still busy after the settle cap for: {', '.join(unsettled)} (their spinning may have "
                   f"disturbed the next variant's block).")
    if any(row.fastest for row in table_rows):
        out.append(f"{FASTEST_MARK} fastest variant at its point among those that passed the accuracy check; "
                   "speedup is paired by round: the median, over the rounds eager fp32 and the variant were both "
                   "timed in (at every precision), of eager's block over the variant's, its interval from those "
                   "rounds and each one's replicate processes.")
    single = [row for row in table_rows if row.record.timed and row.processes == 1]
    if single:
        every = len(single) == len([r for r in table_rows if r.record.timed])
        out.append("timed in one process: " + ("every row" if every
                                               else ", ".join(f"{row.record.case.label} {row.record.case.point}"
                                                              for row in single))
                   + "; its intervals cover that one process's rounds, not the luck of the next process (another "
                   "deployment's): run with benchmark.processes 3 or more for that.")
    if any(row.precision_speedup is not None for row in table_rows):
        out.append("vs eager same precision: eager's median at the row's own reduced float precision (fp16, bf16) "
                   "over the variant's, timed in the same rounds as it and eager fp32.")
    emulated = sorted({row.record.case.label for row in table_rows if bf16_mode(row.record) == "emulated"})
    if emulated:
        why = next(row.record.build["info"]["bf16"] for row in table_rows if bf16_mode(row.record) == "emulated")
        out.append(f"bf16 (emulated) for {', '.join(emulated)}: {why.split('(', 1)[-1].rstrip(')')}, converting to "
                   "and from fp32 around each op: these rows show bf16's accuracy, not the speed of bf16 units.")
    out += peak_notes(table_rows) + energy_notes(table_rows)
    out += own_stream_note(table_rows)
    return out


@dataclass(frozen=True)
class SpeedupTable:
    """The speedup table: its ``columns``, ranked ``rows``, each row's ``cells`` and the ``notes`` below it."""

    columns: list[str]
    rows: list[Row]
    cells: list[list[str]]
    notes: list[str]


def speedup_table(results: ResultSet) -> SpeedupTable:
    """The speedup table of ``results``, as every presentation of it (Markdown, terminal, HTML) shows it."""
    table_rows = rows(results)
    column_sets = [column_set for column_set in registered() if column_set.columns and column_set.shown(table_rows)]
    # identity columns (all but the variant only when they vary), then the column sets'
    columns = [name for name, value in IDENTITY_COLUMNS
               if value is None or len({attrgetter(value)(r) for r in results.records}) > 1]
    columns += ["point", "status"] + [column.heading(table_rows) for column_set in column_sets
                                      for column in column_set.columns]
    return SpeedupTable(columns, table_rows, [_cells(row, columns, column_sets, results, table_rows)
                                              for row in table_rows], notes(results, table_rows))


def markdown_table(results: ResultSet) -> str:
    """The speedup table as GitHub-flavoured Markdown, with notes below."""
    table = speedup_table(results)
    lines = ["| " + " | ".join(table.columns) + " |", "|" + "|".join("---" for _ in table.columns) + "|"]
    lines += ["| " + " | ".join(c.replace("|", "/") for c in row) + " |" for row in table.cells]
    return "\n".join(lines + ([""] + [f"- {n}" for n in table.notes] if table.notes else [])) + "\n"


def text_table(results: ResultSet) -> str:
    """The speedup table aligned for a terminal."""
    table = speedup_table(results)
    lines = [table.columns] + table.cells
    widths = [max(len(line[i]) for line in lines) for i in range(len(table.columns))]
    out = ["  ".join(cell.ljust(w) for cell, w in zip(line, widths)).rstrip() for line in lines]
    out.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(out + ([""] + table.notes if table.notes else [])) + "\n"


def csv_values(row: Row) -> dict:
    """A row's CSV fields (:func:`csv_columns`) with their values."""
    r, c = row.record, row.record.case
    return {"environment": r.environment, "model": c.model, "variant": c.variant, "options": c.options,
            "precision": c.precision, "threads": c.threads, "device": c.device, "point": c.point,
            "input_shapes": c.shapes, "batch": c.batch, "status": r.status, "reason": r.reason,
            **{k: v for column_set in registered() for k, v in column_set.values(row).items()}, "fastest": row.fastest}


def csv_text(results: ResultSet) -> str:
    """One CSV row per record (raw samples stay in results.json)."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=csv_columns())
    writer.writeheader()
    for row in rows(results):
        writer.writerow(csv_values(row))
    return buffer.getvalue()
