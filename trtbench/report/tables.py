"""Speedup tables for reports: Markdown, CSV and the terminal summary."""

from __future__ import annotations

import csv
import io

from trtbench.results import Result

TABLE_COLUMNS = ("variant", "precision", "shape", "status", "median ms", "p99 ms", "samples/s", "speedup", "parity")
CSV_COLUMNS = ("variant", "precision", "shape", "input_shapes", "status", "reason", "build_s", "batch_size",
               "mean_ms", "median_ms", "std_ms", "min_ms", "max_ms", "p90_ms", "p95_ms", "p99_ms",
               "device_median_ms", "throughput", "iterations", "stopped_by", "speedup", "noisy",
               "max_abs_err", "max_rel_err", "top1_agree", "parity_ok")


def _ms(value: float | None) -> str:
    return "" if value is None else f"{value:.3f}"


def table_row(r: Result) -> list[str]:
    """Cells of one result: timings only for ok results, noisy and failed checks marked."""
    status = f"{r.status}, CHECK FAILED" if r.parity_failed else r.status
    if r.status != "ok" or not r.latency_ms:
        return [r.variant, r.precision, f"{r.shape} ({r.input_shapes})", status, "", "", "", "",
                parity_text(r.parity)]
    noisy = " (noisy)" if r.noisy else ""
    return [r.variant, r.precision, f"{r.shape} ({r.input_shapes})", status,
            _ms(r.latency_ms["median"]) + noisy, _ms(r.latency_ms["p99"]),
            f"{r.throughput:.1f}" if r.throughput else "", f"{r.speedup:.2f}x" if r.speedup else "",
            parity_text(r.parity)]


def parity_text(parity: dict | None) -> str:
    """``ok``/``FAIL`` with the worst absolute error and top-1 agreement; ``-`` when unchecked."""
    if not parity:
        return "-"
    if parity.get("max_abs_err") is None:
        return "FAIL (no eager fp32 reference)"
    top1 = parity.get("top1_agree")
    top1_text = f", top1 {top1:.0%}" if top1 is not None else ""
    return ("ok" if parity["ok"] else "FAIL") + f" (abs {parity['max_abs_err']:.1e}{top1_text})"


def markdown_table(results: list[Result]) -> str:
    """The speedup table as GitHub-flavoured Markdown, with skip/fail reasons listed below."""
    lines = ["| " + " | ".join(TABLE_COLUMNS) + " |", "|" + "|".join("---" for _ in TABLE_COLUMNS) + "|"]
    lines += ["| " + " | ".join(c.replace("|", "/") for c in table_row(r)) + " |" for r in results]
    notes = reasons(results)
    if notes:
        lines += ["", *[f"- {note}" for note in notes]]
    return "\n".join(lines) + "\n"


def reasons(results: list[Result]) -> list[str]:
    """One line per variant x precision that was not ok, with its reason (deduplicated)."""
    seen, notes = set(), []
    for r in results:
        if r.status != "ok" and r.reason:
            note = f"{r.variant} {r.precision}: {r.status}: {r.reason}"
            if note not in seen:
                seen.add(note)
                notes.append(note)
    if any(r.noisy for r in results):
        notes.append("(noisy): IQR/median above 10%; compare these timings with care.")
    capped = [f"{r.variant} {r.precision} {r.shape}" for r in results if r.stopped_by == "max_time_s"]
    if capped:
        notes.append(f"adaptive timing hit max_time_s before the median's 95% CI reached the target for: "
                     f"{', '.join(capped)}; raise benchmark.max_time_s for tighter medians.")
    return notes


def text_table(results: list[Result]) -> str:
    """The speedup table aligned for a terminal."""
    rows = [list(TABLE_COLUMNS)] + [table_row(r) for r in results]
    widths = [max(len(row[i]) for row in rows) for i in range(len(TABLE_COLUMNS))]
    out = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    out.insert(1, "  ".join("-" * w for w in widths))
    notes = reasons(results)
    return "\n".join(out + ([""] + notes if notes else [])) + "\n"


def csv_text(results: list[Result]) -> str:
    """One CSV row per result with every summary field (raw samples stay in results.json)."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_COLUMNS)
    writer.writeheader()
    for r in results:
        lat, dev, par = r.latency_ms or {}, r.device_ms or {}, r.parity or {}
        writer.writerow({
            "variant": r.variant, "precision": r.precision, "shape": r.shape, "input_shapes": r.input_shapes,
            "status": r.status, "reason": r.reason, "build_s": r.build_s, "batch_size": r.batch_size,
            **{f"{k}_ms": lat.get(k) for k in ("mean", "median", "std", "min", "max", "p90", "p95", "p99")},
            "device_median_ms": dev.get("median"), "throughput": r.throughput, "iterations": r.iterations,
            "stopped_by": r.stopped_by, "speedup": r.speedup, "noisy": r.noisy,
            "max_abs_err": par.get("max_abs_err"), "max_rel_err": par.get("max_rel_err"),
            "top1_agree": par.get("top1_agree"), "parity_ok": par.get("ok"),
        })
    return buffer.getvalue()
