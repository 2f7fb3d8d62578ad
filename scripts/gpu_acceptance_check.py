"""Verdicts for scripts/gpu_acceptance.sh: one line per check, from a run's results.json and manifest.

    python3 scripts/gpu_acceptance_check.py OUTPUT_DIR VERIFY_EXIT_CODE

Checks: every TensorRT row ran ok (each TensorRT variant at fp32 and fp16, and ``trt`` at int8: the
one with an INT8 path, through NVIDIA ModelOpt); every skipped row may be skipped on this machine;
every row that ran passed its accuracy check (element-wise; at int8 the INT8 budget); each TensorRT variant
at fp16 is faster at the opt shape (median latency) than eager at fp16 and compiled at fp16, the paths a
user would otherwise deploy at that precision (:data:`FP16_RIVALS`), or the verdict names why one of those
was not timed (its row skipped or failed, with the reason); every TensorRT artifact was saved and `trtbench
verify` reloaded them all in a fresh process. Exit 0 when all pass.

A skipped row passes when it has a reason and this machine agrees: trtbench's own judgement
(:func:`trtbench.config.plan.why_unavailable`, the variant's ``unavailable_reason`` for the row's device
and precision) still finds a reason it cannot run here. Eager at fp32 and fp16 and the TensorRT builds
that must run (:data:`REQUIRED`) must, so a skipped one fails whatever the reason. Each skipped variant is printed as a
WARN line with its reason.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

from trtbench.core.case import BASELINE_VARIANT
from trtbench.config.plan import why_unavailable
from trtbench.results.resultset import ResultSet
from trtbench.core.status import Status

TRT = ("trt", "trt_traced", "trt_scripted")
PRECISIONS = ("fp32", "fp16")
INT8 = "int8"
# (variant, precision) of every TensorRT build that must run and save: each variant at fp32 and fp16,
# and trt at int8 (the variant with an INT8 path; the others are skipped there, saying so)
REQUIRED = tuple((v, p) for v in TRT for p in PRECISIONS) + (("trt", INT8),)
MUST_RUN = REQUIRED + tuple((BASELINE_VARIANT, p) for p in PRECISIONS)
# what each TensorRT variant at fp16 must beat at opt: eager and torch.compile at the same precision (beating
# eager fp32 alone passed while TensorRT was slower than eager fp16)
FP16_RIVALS = (BASELINE_VARIANT, "compiled")
# Why the trtbench image (Dockerfile) cannot time these; docs/tensorrt.md has the details.
NOT_IN_IMAGE = (
    "the trtbench image installs no onnxruntime-gpu: its TensorRT provider (onnxruntime-gpu 1.31.1 on PyPI) "
    "links TensorRT 10 (libnvinfer.so.10) while the image has TensorRT 11, and its CUDA provider (built for "
    "CUDA 13) is not yet verified beside the image's CUDA; see docs/tensorrt.md")
IMAGE_NOTES = {"ort_cuda": NOT_IN_IMAGE, "ort_trt": NOT_IN_IMAGE}


def result_rows(results) -> list[dict]:
    """One dict per record of a :class:`trtbench.results.resultset.ResultSet` (any schema version it reads)."""
    return [{"variant": r.case.variant, "precision": r.case.precision, "shape": r.case.point, "device": r.case.device,
             "status": r.status, "reason": r.reason, "parity_ok": (r.accuracy or {}).get("ok"),
             "median_ms": r.stats.median if r.timed else None} for r in results]


def describe(row: dict) -> str:
    text = f"{row['variant']} {row['precision']} {row['shape']} {row['status']}"
    return f"{text} ({row['reason'][:120]})" if row["reason"] else text


def check_trt_rows(rows: list[dict]) -> tuple[bool, str]:
    shapes = sorted({r["shape"] for r in rows if r["variant"] == "eager"})
    found = {(r["variant"], r["precision"], r["shape"]): r for r in rows}
    missing = [f"{v} {p} {s}" for v, p in REQUIRED for s in shapes if (v, p, s) not in found]
    required = [r for r in rows if (r["variant"], r["precision"]) in REQUIRED]
    bad = [describe(r) for r in required if r["status"] != Status.OK]
    if not shapes or missing or bad:
        return False, "; ".join((["no eager rows"] if not shapes else []) + [f"missing {m}" for m in missing] + bad)
    return True, f"{len(required)} rows"


def skip_problem(row: dict) -> str | None:
    """Why a skipped row fails acceptance; None when it may be skipped on this machine (trtbench, asked
    again here for the row's device and precision, finds a reason the variant cannot run)."""
    if (row["variant"], row["precision"]) in MUST_RUN:
        return f"{describe(row)}: {row['variant']} {row['precision']} must run on a GPU machine"
    if not row["reason"]:
        return f"{describe(row)} with no reason"
    if why_unavailable(row["variant"], torch.device(row["device"]), row["precision"]) is None:
        return f"{describe(row)}, yet {row['variant']} can run on {row['device']} here"
    return None


def check_skipped(rows: list[dict]) -> tuple[bool, str]:
    skipped = [r for r in rows if r["status"] == Status.SKIPPED]
    bad = [problem for problem in map(skip_problem, skipped) if problem]
    return not bad, "; ".join(bad) if bad else f"{len(skipped)} rows, each with a reason that holds here"


def skipped_warnings(rows: list[dict]) -> list[str]:
    """One WARN line per skipped variant and reason, naming the precisions and shapes it covers."""
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        if row["status"] == Status.SKIPPED:
            groups.setdefault((row["variant"], row["reason"]), []).append(row)
    lines = []
    for (variant, reason), group in groups.items():
        where = " ".join(dict.fromkeys(f"{r['precision']}/{r['shape']}" for r in group))
        note = f" [{IMAGE_NOTES[variant]}]" if variant in IMAGE_NOTES else ""
        lines.append(f"WARN  skipped {variant} ({where}): {reason or 'no reason recorded'}{note}")
    return lines


def check_accuracy(rows: list[dict]) -> tuple[bool, str]:
    ran = [r for r in rows if r["status"] != Status.SKIPPED]  # a skipped row has no accuracy (check_skipped judges it)
    bad = [describe(r) + ("" if r["status"] != Status.OK else " parity failed")
           for r in ran if r["parity_ok"] is not True]
    return (not bad and bool(ran)), "; ".join(bad) if bad else f"{len(ran)} rows"


def check_fp16_speed(rows: list[dict]) -> tuple[bool, str]:
    """Each TensorRT variant at fp16 faster at opt than each of :data:`FP16_RIVALS` at fp16, or, for a rival
    that was not timed, the reason its row gives (a rival absent from the run, or without a reason, fails)."""
    at_opt = {(r["variant"], r["precision"]): r for r in rows if r["shape"] == "opt"}
    parts, ok = [], True
    for rival in FP16_RIVALS:
        against = at_opt.get((rival, "fp16"))
        if against is None or not against["median_ms"]:
            ok = ok and bool(against and against["reason"])
            why = "not in the run" if against is None else f"{against['status']}: {against['reason'] or 'no reason'}"
            parts.append(f"{rival} fp16 not timed ({why})")
            continue
        speedups = []
        for variant in TRT:
            median = (at_opt.get((variant, "fp16")) or {}).get("median_ms")
            ok = ok and bool(median) and median < against["median_ms"]
            speedups.append(f"{variant} {against['median_ms'] / median:.2f}x" if median else f"{variant} not timed")
        parts.append(f"over {rival} fp16 ({against['median_ms']:.3f} ms): " + ", ".join(speedups))
    return ok, "; ".join(parts)


def check_artifacts(manifest: dict | None, verify_rc: int) -> tuple[bool, str]:
    saved = {(a["variant"], a["precision"]) for a in (manifest or {}).get("artifacts", [])}
    missing = [f"{v} {p}" for v, p in REQUIRED if (v, p) not in saved]
    problems = ([f"not saved: {', '.join(missing)}"] if missing else []) + \
               ([f"trtbench verify exited {verify_rc}"] if verify_rc else [])
    return not problems, "; ".join(problems) or f"{len(manifest['artifacts'])} files verified"


def main(out_dir: str, verify_rc: str) -> int:
    out = Path(out_dir)
    rows = result_rows(ResultSet.load(out)) if (out / "results.json").is_file() else []
    manifest_path = out / "artifacts" / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.is_file() else None
    verdicts = [("every TRT row ok", check_trt_rows(rows)),
                ("skipped rows may be skipped here", check_skipped(rows)),
                ("parity ok", check_accuracy(rows)),
                ("TRT fp16 faster than eager fp16 and compiled fp16 at opt", check_fp16_speed(rows)),
                ("artifacts reload in a fresh process", check_artifacts(manifest, int(verify_rc)))]
    for line in skipped_warnings(rows):
        print(line)
    for name, (ok, detail) in verdicts:
        print(f"{'PASS' if ok else 'FAIL'}  {name}: {detail}")
    return 0 if all(ok for _, (ok, _) in verdicts) else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
