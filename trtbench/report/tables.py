"""Speedup tables for reports: Markdown, CSV and the terminal summary, all read from a ResultSet.

Rows are grouped by point (environment, model, precision, threads, shapes) and ranked by
median latency within it; the fastest variant that passed its accuracy check is marked.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from typing import Optional

from trtbench.env import environment_name
from trtbench.interference import interference_check
from trtbench.record import Record
from trtbench.resultset import ResultSet
from trtbench.stats import Interval

FASTEST_MARK = "*"
CSV_COLUMNS = ("environment", "model", "variant", "options", "precision", "threads", "device", "point",
               "input_shapes", "batch", "status", "reason", "build_s", "mean_ms", "median_ms", "median_ci_rel",
               "std_ms", "min_ms", "max_ms", "p90_ms", "p95_ms", "p99_ms", "device_median_ms", "throughput",
               "iterations", "rounds", "stopped_by", "speedup", "speedup_low", "speedup_high", "noisy",
               "max_abs_err", "max_rel_err", "top1_agree", "parity_ok", "fastest")


@dataclass(frozen=True)
class Row:
    """One record as the tables present it."""

    record: Record
    speedup: Optional[Interval]
    fastest: bool


def _point_key(r: Record) -> tuple:
    c = r.case
    return (r.environment, c.model, c.precision, c.threads, c.input_shapes)


def rows(results: ResultSet) -> list[Row]:
    """Every record, points in the order first seen, ranked by median within each point (timed first)."""
    groups: dict[tuple, list[Record]] = {}
    for record in results:
        groups.setdefault(_point_key(record), []).append(record)
    out = []
    for records in groups.values():
        timed = sorted((r for r in records if r.timed), key=lambda r: r.stats.median)
        passing = [r for r in timed if not r.parity_failed]
        best = passing[0] if passing else None
        for r in timed + [r for r in records if not r.timed]:
            out.append(Row(r, results.speedup(r), r is best and len(timed) > 1))
    return out


def _ms(value: float | None) -> str:
    return "" if value is None else f"{value:.3f}" if value < 100 else f"{value:.1f}"


def speedup_text(interval: Optional[Interval]) -> str:
    """``1.52x [1.49-1.55]``; the interval is the paired rounds' 95% CI."""
    if interval is None:
        return ""
    if interval.low == float("-inf"):
        return f"{interval.value:.2f}x"
    return f"{interval.value:.2f}x [{interval.low:.2f}-{interval.high:.2f}]"


def parity_text(parity: dict | None) -> str:
    """``ok``/``FAIL`` with the worst absolute error and top-1 agreement; ``-`` when unchecked."""
    if not parity:
        return "-"
    if parity.get("kind") == "int8":  # judged over the evaluation samples (trtbench.accuracy)
        top1 = parity.get("top1_agree")
        figures = (f"top1 {top1:.1%}, " if top1 is not None else "") + f"SQNR {parity['sqnr_db']:.1f} dB"
        return ("ok" if parity["ok"] else "FAIL") + f" ({figures})"
    if parity.get("max_abs_err") is None:
        return "FAIL (no eager fp32 reference)"
    top1 = parity.get("top1_agree")
    top1_text = f", top1 {top1:.0%}" if top1 is not None else ""
    return ("ok" if parity["ok"] else "FAIL") + f" (abs {parity['max_abs_err']:.1e}{top1_text})"


def _share(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.0%}"


def flops_text(r: Record) -> str:
    """``412 (62%, 88%)``: achieved GFLOP/s and its share of the hardware peak and of measured matmul."""
    achieved = r.achieved_flops_per_s
    if achieved is None:
        return ""
    return f"{achieved / 1e9:.0f} ({_share(r.ceiling_share('peak'))}, {_share(r.ceiling_share('measured'))})"


def _mib(nbytes: Optional[int]) -> str:
    return "" if nbytes is None else f"{nbytes / 2**20:.0f}"


def _num(value: Optional[float], digits: int) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def deployment_table(results: ResultSet) -> str:
    """Per variant build: build time, compile on first call, cold start of the saved file, peak memory."""
    lines = ["| model | variant | precision | threads | build s | first call s | artifact load s | "
             "cold first call ms | peak MiB build | peak MiB run |", "|---|---|---|---|---|---|---|---|---|---|"]
    builds: dict[tuple, list[Record]] = {}
    for r in results:
        if r.status == "ok":
            c = r.case
            builds.setdefault((r.environment, c.model, c.label, c.precision, c.threads), []).append(r)
    for (_, model, label, precision, threads), records in builds.items():
        first = records[0]
        cold = first.metrics.get("cold_start") or []
        run_peaks = [p for p in (x.metrics.get("peak_memory", {}).get("peak_bytes") for x in records) if p]
        cells = [model, label, precision, str(threads), _num(first.build.get("build_s"), 2),
                 _num(first.build.get("info", {}).get("first_call_s"), 2),
                 ", ".join(_num(x.get("load_s"), 2) for x in cold if x.get("load_s") is not None),
                 ", ".join(_num(x.get("first_call_ms"), 1) for x in cold if x.get("first_call_ms") is not None),
                 _mib(first.build.get("peak_memory", {}).get("peak_bytes")),
                 _mib(max(run_peaks)) if run_peaks else ""]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n" if builds else ""


def isolation_table(results: ResultSet) -> str:
    """Per variant build: where it was timed, its threads and spinning, and what settling cost."""
    lines = ["| model | variant | precision | method | process | threads (intra/inter, runtime) | spinning | "
             "settle ms (CPU ms) | CPU between blocks ms | peak RSS MiB |", "|---|---|---|---|---|---|---|---|---|---|"]
    seen = set()
    for r in results:
        facts = r.metrics.get("isolation")
        c = r.case
        key = (r.environment, c.model, c.label, c.precision, c.threads)
        if not facts or key in seen:
            continue
        seen.add(key)
        threads = f"{facts.get('intra_op_threads')}/{facts.get('inter_op_threads')}"
        if facts.get("runtime_threads") is not None:
            threads += f", {facts['runtime_threads']}"
        spinning = facts.get("spinning") or f"OpenMP (OMP_WAIT_POLICY {facts.get('omp_wait_policy')})"
        cells = [c.model, c.label, c.precision, facts.get("method", ""),
                 "this one" if facts.get("method") == "in_process" else f"worker pid {facts.get('pid')}",
                 threads, spinning, f"{_num(facts.get('settle_ms_median'), 1)} ({_num(facts.get('settle_cpu_ms_median'), 1)})",
                 _num(facts.get("cpu_between_blocks_ms_median"), 2), _num(facts.get("peak_rss_mb"), 0)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n" if seen else ""


def _columns(results: ResultSet) -> list[str]:
    """Columns, with model/precision/threads/environment only when they vary."""
    records = results.records
    cols = []
    if len({r.environment for r in records}) > 1:
        cols.append("environment")
    if len({r.case.model for r in records}) > 1:
        cols.append("model")
    cols.append("variant")
    if len({r.case.precision for r in records}) > 1:
        cols.append("precision")
    if len({r.case.threads for r in records}) > 1:
        cols.append("threads")
    cols += ["point", "status", "median ms (95% CI)", "p99 ms", "samples/s", "speedup [95% CI]"]
    if any(r.achieved_flops_per_s for r in records if r.timed):
        cols.append("GFLOP/s (% peak, % matmul)")
    return cols + ["parity"]


def _cells(row: Row, columns: list[str], environments: dict) -> list[str]:
    r, c = row.record, row.record.case
    status = f"{r.status}, CHECK FAILED" if r.parity_failed else r.status
    stats = r.stats if r.timed else None
    values = {
        "environment": environment_name(environments.get(r.environment, {"id": r.environment})),
        "model": c.model, "variant": c.label + (f" {FASTEST_MARK}" if row.fastest else ""),
        "precision": c.precision, "threads": str(c.threads), "point": f"{c.point} ({c.shapes})", "status": status,
        "median ms (95% CI)": (f"{_ms(stats.median)} ±{stats.median_ci_rel:.1%}" if stats else ""),
        "p99 ms": _ms(stats.p99) if stats else "",
        "samples/s": f"{r.throughput:.1f}" if stats and r.throughput else "",
        "speedup [95% CI]": speedup_text(row.speedup), "parity": parity_text(r.parity),
        "GFLOP/s (% peak, % matmul)": flops_text(r) if stats else "",
    }
    return [values[col] for col in columns]


def notes(results: ResultSet, table_rows: list[Row]) -> list[str]:
    """Reasons for rows that are not ok (deduplicated), and what limited the timing; ``table_rows`` is
    :func:`rows` of ``results``, already computed by the caller."""
    seen, out = set(), []
    for r in results:
        if r.status != "ok" and r.reason:
            note = f"{r.case.model} {r.case.label} {r.case.precision}: {r.status}: {r.reason}"
            if note not in seen:
                seen.add(note)
                out.append(note)
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
    unsettled = sorted({r.case.label for r in timed if (r.metrics.get("isolation") or {}).get("unsettled_blocks")})
    if unsettled:
        out.append(f"threads still busy after the settle cap for: {', '.join(unsettled)} (their spinning may have "
                   f"disturbed the next variant's block).")
    if any(row.fastest for row in table_rows):
        out.append(f"{FASTEST_MARK} fastest variant at its point among those that passed the accuracy check; "
                   "speedup is eager's median over the variant's, its interval from the rounds both were "
                   "timed in, interleaved.")
    return out


def markdown_table(results: ResultSet) -> str:
    """The speedup table as GitHub-flavoured Markdown, with notes below."""
    columns = _columns(results)
    table_rows = rows(results)
    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    lines += ["| " + " | ".join(c.replace("|", "/") for c in _cells(row, columns, results.environments)) + " |"
              for row in table_rows]
    extra = notes(results, table_rows)
    return "\n".join(lines + ([""] + [f"- {n}" for n in extra] if extra else [])) + "\n"


def text_table(results: ResultSet) -> str:
    """The speedup table aligned for a terminal."""
    columns = _columns(results)
    table_rows = rows(results)
    table = [columns] + [_cells(row, columns, results.environments) for row in table_rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(columns))]
    out = ["  ".join(cell.ljust(w) for cell, w in zip(line, widths)).rstrip() for line in table]
    out.insert(1, "  ".join("-" * w for w in widths))
    extra = notes(results, table_rows)
    return "\n".join(out + ([""] + extra if extra else [])) + "\n"


def csv_text(results: ResultSet) -> str:
    """One CSV row per record with every summary field (raw samples stay in results.json)."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_COLUMNS)
    writer.writeheader()
    for row in rows(results):
        r, c = row.record, row.record.case
        stats = r.stats if r.timed else None
        lat = stats.to_dict() if stats else {}
        dev = r.device_stats.to_dict() if r.timed and r.device_stats else {}
        par, sp = r.parity or {}, row.speedup
        writer.writerow({
            "environment": r.environment, "model": c.model, "variant": c.variant, "options": c.options,
            "precision": c.precision, "threads": c.threads, "device": c.device, "point": c.point,
            "input_shapes": c.shapes, "batch": c.batch, "status": r.status, "reason": r.reason,
            "build_s": r.build.get("build_s"),
            **{f"{k}_ms": lat.get(k) for k in ("mean", "median", "std", "min", "max", "p90", "p95", "p99")},
            "median_ci_rel": lat.get("median_ci_rel"), "device_median_ms": dev.get("median"),
            "throughput": r.throughput if stats else None, "iterations": lat.get("iterations"),
            "rounds": len(r.rounds) or None, "stopped_by": r.stopped_by,
            "speedup": sp.value if sp else None, "speedup_low": sp.low if sp else None,
            "speedup_high": sp.high if sp else None, "noisy": lat.get("noisy"),
            "max_abs_err": par.get("max_abs_err"), "max_rel_err": par.get("max_rel_err"),
            "top1_agree": par.get("top1_agree"), "parity_ok": par.get("ok"), "fastest": row.fastest,
        })
    return buffer.getvalue()
