"""INT8 on this CPU: how much faster than eager fp32, measured, never assumed.

Run:  .venv/bin/python benchmarks/int8_speedup.py [--models resnet18,resnet50] [--batches 1,8]
          [--variants ort,openvino,compiled,aoti] [--max-time 20] [--out DIR]

For each model and batch it runs trtbench itself (its timing and isolation: each variant in its own
worker process, interleaved rounds) with ``precisions: [fp32, int8]``: eager fp32 (the baseline),
every listed variant at fp32 (the fastest fp32 backend) and at int8 (each backend's own quantizer,
calibrated on seeded random data, so accuracy is *not* judged here: random weights make it
meaningless; the trained model in tests/ judges it). It prints each row's speedup over eager fp32 with
its 95% CI, names the fastest fp32 and int8 rows, and states the CPU's flags (AVX2, AVX-512, VNNI,
AMX). On a CPU with VNNI the target is the best INT8 at least 2x eager fp32 at batch 8; without, a
slower INT8 is a finding. Run it on an otherwise idle machine (minutes per model and batch).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "amx_tile", "amx_int8")


def cpu_flags() -> list[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return []
    line = next((row for row in text.splitlines() if row.startswith("flags")), "")
    have = set(line.split(":", 1)[-1].split())
    return [flag for flag in FLAGS if flag in have]


def config(model: str, batch: int, variants: list[str], max_time: float, out: Path) -> dict:
    shape = [batch, 3, 224, 224]
    return {"name": f"int8-{model}-b{batch}", "model": {"source": "torchvision", "name": model},
            "inputs": [{"name": "input", "dtype": "float32", "min_shape": shape, "opt_shape": shape,
                        "max_shape": shape}],
            "device": "cpu", "precisions": ["fp32", "int8"], "variants": ["eager", *variants],
            "calibration": {"source": "random", "samples": 16, "eval_samples": 8, "max_fp32_layers": 0},
            "tolerances": {"int8": {"top1_agree_min": 0.0, "sqnr_db_min": -1000.0}},  # random weights: not judged
            "benchmark": {"threads": 2, "shapes": ["opt"], "budget_s": max_time},
            "output": {"dir": str(out), "save_artifacts": False, "cold_start": False}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="resnet18,resnet50")
    parser.add_argument("--batches", default="1,8")
    parser.add_argument("--variants", default="ort,openvino,compiled,aoti")
    parser.add_argument("--max-time", type=float, default=20.0, help="benchmark.budget_s per point")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from trtbench.results.resultset import ResultSet

    root = args.out or Path(tempfile.mkdtemp(prefix="int8-speedup-"))
    root.mkdir(parents=True, exist_ok=True)
    flags = cpu_flags()
    vnni = "yes" if {"avx512_vnni", "avx_vnni"} & set(flags) else "no"
    print(f"CPU flags: {', '.join(flags) or 'unknown'}; VNNI: {vnni}")
    for model in args.models.split(","):
        for batch in (int(b) for b in args.batches.split(",")):
            out = root / f"{model}-b{batch}"
            path = root / f"{model}-b{batch}.yaml"
            path.write_text(yaml.safe_dump(config(model, batch, args.variants.split(","), args.max_time, out)))
            proc = subprocess.run([sys.executable, "-m", "trtbench", "run", "--config", str(path), "--quiet"],
                                  capture_output=True, text=True)
            if not (out / "results.json").is_file():
                print(f"{model} b{batch}: the run failed (exit {proc.returncode}): {proc.stderr[-2000:]}")
                continue
            results = ResultSet.load(out)
            rows = []
            for record in results:
                speedup = results.speedup(record)
                median = record.stats.median if record.timed else None
                rows.append((record.case.variant, record.case.precision, record.status, median, speedup,
                             record.reason))
            print(f"\n{model}, batch {batch}, 2 threads ({out}):")
            print(f"  {'variant':10} {'precision':9} {'status':8} {'median ms':>10}  speedup over eager fp32 [95% CI]")
            for variant, precision, status, median, speedup, reason in rows:
                sp = (f"{speedup.value:.2f}x [{speedup.low:.2f}-{speedup.high:.2f}]" if speedup else "")
                ms = f"{median:10.2f}" if median is not None else " " * 10
                print(f"  {variant:10} {precision:9} {status:8} {ms}  {sp} {'' if status == 'ok' else reason[:80]}")
            for precision in ("fp32", "int8"):
                timed = [(r[4].value, r[0]) for r in rows if r[1] == precision and r[4] and r[0] != "eager"]
                if timed:
                    best = max(timed)
                    print(f"  fastest {precision}: {best[1]} {best[0]:.2f}x")
            print(json.dumps({"model": model, "batch": batch, "flags": flags,
                              "rows": [{"variant": r[0], "precision": r[1], "status": str(r[2]), "median_ms": r[3],
                                        "speedup": r[4].value if r[4] else None,
                                        "ci": [r[4].low, r[4].high] if r[4] else None} for r in rows]}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
