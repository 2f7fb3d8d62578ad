"""Are trtbench's reduced-precision ratios (a runtime's fp32 median over its bf16 or int8 median) those of each
runtime deployed alone?

Run:  .venv/bin/python benchmarks/reduced_alone.py [--alternations 3] [--seconds 6] [--warmup-s 3] [--batch 8]
          [--threads 2] [--variants eager,compiled,ort,openvino] [--precisions fp32,bf16,int8]
          [--processes N] [--trtbench-src DIR] [--compiled-freezing] [--keep DIR] [--schedule steady]
          [--budget-s S]

trtbench: one run of resnet18 (random weights) at Bx3x224x224 with every variant at every precision, default
adaptive timing, saving its files. Alone: each runtime at each precision in a fresh process of its own, timed by this
file's plain loop (``--warmup-s`` of calls, then ``--seconds`` of single calls; not trtbench's timing code), on the
files and settings a deployment takes from trtbench's manifest (``artifacts/manifest.json``: the ONNX files, the
OpenVINO IR with its config, the int8 .pt2 with its Inductor settings); eager and torch.compile at fp32 and bf16 build
resnet18 in their process and load the run's weights file-backed. Per runtime, its fp32 process runs before and after
each reduced one (fp32, bf16, fp32, int8, fp32), and a reduced ratio alone is the geometric mean of the two fp32
medians around it over its median, so the VM's drift cancels. Each alternation runs trtbench first, then the alone
processes. For every runtime and reduced precision it prints the median over the alternations of trtbench's ratio (the
report's "vs same variant fp32": the reduced row's speedup over its fp32 row, paired by the rounds both were timed
in) beside the ratio alone, and how far apart they
are (target: within 8%). ``--compiled-freezing`` also times torch.compile alone with Inductor's freezing (what a CPU
deployment of it would usually set), beside the plain torch.compile trtbench builds. Run it on an otherwise idle
machine; the figures go to benchmarks/NOTES.md.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import torch
import torchvision
import yaml

TARGET = 0.08  # a reduced-over-fp32 ratio against the ratio alone
REDUCED = ("bf16", "int8")

# One runtime at one precision alone: build or load it, its input prepared outside the timed loop, warm up, then
# single calls for a while, timed by plain perf_counter_ns as a deployment would time itself.
ALONE = r'''
import importlib, json, sys, time
import numpy as np
import torch
job = json.loads(sys.argv[1])
for module in job.get("imports", ()):  # what the manifest says to import before loading (custom ops)
    importlib.import_module(module)
kind, precision, path, settings = job["kind"], job["precision"], job["path"], job["settings"]
torch.set_num_threads(job["threads"])
x = torch.randn(*job["shape"])
if kind in ("eager", "compiled", "compiled_freezing") and precision != "int8":
    import torchvision
    model = torchvision.models.resnet18().eval()
    model.load_state_dict(torch.load(path, weights_only=True, mmap=True))
    if precision == "bf16":
        model, x = model.to(torch.bfloat16), x.to(torch.bfloat16)
    if kind == "compiled_freezing":
        torch._inductor.config.freezing = True
    if kind != "eager":
        model = torch.compile(model)
    def call():
        with torch.inference_mode():
            model(x)
elif kind == "compiled":  # int8: the PT2E graph trtbench saved, compiled with the settings its manifest records
    compiled = torch.compile(torch.export.load(path).module(), mode=settings["compile"]["mode"], dynamic=False)
    def call():
        with torch.inference_mode(), torch._inductor.config.patch(settings["compile"]["inductor_configs"]):
            compiled(x)
elif kind == "ort":
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = job["threads"]
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    feed = {session.get_inputs()[0].name: x.numpy()}
    def call():
        session.run(None, feed)
elif kind == "openvino":
    import openvino as ov
    compiled = ov.Core().compile_model(path, "CPU", {**settings["config"], "INFERENCE_NUM_THREADS": job["threads"]})
    request = compiled.create_infer_request()
    feed = {0: x.numpy()}
    def call():
        request.infer(feed)
else:
    raise SystemExit(f"unknown kind {kind}")
start = time.perf_counter()
while time.perf_counter() - start < job["warmup_s"]:
    call()
samples = []
start = time.perf_counter()
while time.perf_counter() - start < job["seconds"] or len(samples) < 20:
    t0 = time.perf_counter_ns()
    call()
    samples.append((time.perf_counter_ns() - t0) / 1e6)
print(json.dumps({"median_ms": float(np.median(samples)), "calls": len(samples)}))
'''


# trtbench's own figures of a run: each row's median, and each reduced row's ratio over its variant's fp32 row as
# the report states it ("vs same variant fp32": paired by round, trtbench.report.reduced.over_same_variant).
PAIRED = r'''
import json, sys
from pathlib import Path
from trtbench.report.reduced import over_same_variant
from trtbench.results.resultset import ResultSet
results = ResultSet.load(Path(sys.argv[1]))
found = {}
for r in results:
    if r.status == "ok" and r.rounds:
        found[f"{r.case.variant} {r.case.precision}"] = r.stats.median
        ratio = over_same_variant(results, r) if r.case.precision != "fp32" else None
        if ratio is not None:
            found[f"{r.case.variant} {r.case.precision}/fp32"] = ratio.value
print(json.dumps(found))
'''


def alone(job: dict) -> float:
    """The median ms of one runtime at one precision alone in a fresh process (``job``: what ALONE reads)."""
    out = subprocess.run([sys.executable, "-c", ALONE, json.dumps(job)], capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"{job['kind']} {job['precision']} alone failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])["median_ms"]


def run_trtbench(out: Path, args) -> dict[tuple[str, str], float]:
    """(variant, precision) -> the median ms trtbench's run reports; its files stay in ``out``."""
    benchmark = {"threads": args.threads, "measure_ceiling": False,
                 **({"schedule": args.schedule} if args.schedule else {})}
    if args.processes:
        benchmark["processes"] = args.processes
    if args.budget_s:
        benchmark["budget_s"] = args.budget_s
    shape = [args.batch, 3, 224, 224]
    config = {"name": "reduced-alone", "model": {"source": "torchvision", "name": "resnet18"},
              "inputs": [{"name": "input", "dtype": "float32", "shape": shape}], "device": "cpu",
              "precisions": args.precisions.split(","), "variants": args.variants.split(","),
              "calibration": {"source": "random", "samples": 32, "eval_samples": 64, "method": "minmax",
                              "max_fp32_layers": 4},
              "tolerances": {"int8": {"top1_agree_min": 0.0, "sqnr_db_min": 20}}, "benchmark": benchmark,
              "output": {"dir": str(out), "save_artifacts": True, "cold_start": False}}
    path = out.parent / f"{out.name}.yaml"
    path.write_text(yaml.safe_dump(config))
    env = dict(os.environ)
    if args.trtbench_src:
        env["PYTHONPATH"] = os.pathsep.join([args.trtbench_src, env.get("PYTHONPATH", "")])
    subprocess.run([sys.executable, "-m", "trtbench", "--config", str(path), "--fresh", "--quiet"], env=env,
                   cwd=out.parent, capture_output=True)  # exit 1 where a row failed: its others still count
    paired = subprocess.run([sys.executable, "-c", PAIRED, str(out / "results.json")], env=env, capture_output=True,
                            text=True, check=True)
    return {tuple(key.split(" ")): value for key, value in json.loads(paired.stdout).items()}


def manifest_files(out: Path) -> dict[tuple[str, str], dict]:
    """(variant, precision) -> the manifest entry of the file trtbench published (path made absolute)."""
    manifest = json.loads((out / "artifacts" / "manifest.json").read_text())
    return {(e["variant"], e["precision"]): {**e, "path": str(out / "artifacts" / e["file"])}
            for e in manifest["artifacts"] if "variant" in e}


def alone_job(kind: str, precision: str, files: dict, weights: Path, args) -> dict | None:
    """What an alone process of ``kind`` at ``precision`` loads (None: nothing to load: no file was published)."""
    base = {"kind": kind, "precision": precision, "threads": args.threads, "shape": [args.batch, 3, 224, 224],
            "seconds": args.seconds, "warmup_s": args.warmup_s, "settings": {}}
    if kind in ("eager", "compiled", "compiled_freezing") and precision != "int8":
        return {**base, "path": str(weights)}
    if kind == "compiled_freezing":  # int8: the saved graph compiles with the Inductor settings its manifest records
        return None
    entry = files.get((kind, precision))
    if entry is None and kind == "openvino" and precision == "bf16":  # the bf16 row: the fp32 IR under a bf16 hint
        entry = files.get(("openvino", "fp32"))
        entry = entry and {**entry, "settings": {**entry["settings"], "config": {
            **entry["settings"]["config"], "INFERENCE_PRECISION_HINT": "bf16"}}}
    return None if entry is None else {**base, "path": entry["path"], "settings": entry.get("settings") or {},
                                       "imports": entry.get("imports") or []}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--alternations", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=6.0, help="timed seconds per alone process")
    parser.add_argument("--warmup-s", type=float, default=3.0, help="untimed seconds of calls per alone process")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--variants", default="eager,compiled,ort,openvino")
    parser.add_argument("--precisions", default="fp32,bf16,int8")
    parser.add_argument("--processes", type=int, default=None, help="trtbench's benchmark.processes")
    parser.add_argument("--trtbench-src", help="a trtbench checkout to run instead of the installed one")
    parser.add_argument("--keep", help="copy each trtbench run's results.json and report.md into this folder")
    parser.add_argument("--schedule", choices=("interleaved", "steady"), help="trtbench's benchmark.schedule")
    parser.add_argument("--budget-s", type=float, help="trtbench's benchmark.budget_s (default: its own)")
    parser.add_argument("--compiled-freezing", action="store_true",
                        help="also time torch.compile alone with Inductor's freezing (not compared: trtbench's "
                             "compiled row does not freeze)")
    args = parser.parse_args()
    kinds = args.variants.split(",") + (["compiled_freezing"] if args.compiled_freezing else [])
    reduced = [p for p in args.precisions.split(",") if p in REDUCED]
    ours: dict[tuple[str, str], list[float]] = {}  # (variant, reduced) -> trtbench's ratio per alternation
    truth: dict[tuple[str, str], list[float]] = {}  # (kind, reduced) -> the ratio alone per alternation
    medians: dict[tuple[str, str], list[float]] = {}  # (kind, precision) -> alone medians
    with tempfile.TemporaryDirectory(prefix="reduced-alone-") as tmp:
        tmp = Path(tmp)
        weights = tmp / "resnet18.pt"
        torch.save(torchvision.models.resnet18().state_dict(), weights)
        for i in range(args.alternations):
            out = tmp / f"run_{i}"
            measured = run_trtbench(out, args)
            if args.keep:
                kept = Path(args.keep) / f"run_{i}"
                kept.mkdir(parents=True, exist_ok=True)
                for name in ("results.json", "report.md"):
                    shutil.copy(out / name, kept / name)
            for (variant, precision), ratio in measured.items():
                if precision.endswith("/fp32"):
                    ours.setdefault((variant, precision.split("/")[0]), []).append(ratio)
            timed = ", ".join(f"{v} {p} {m:.2f} ms" for (v, p), m in sorted(measured.items()) if "/" not in p)
            print(f"alternation {i + 1}, trtbench: {timed}", flush=True)
            files = manifest_files(out)
            line = []
            for kind in kinds:
                fp32_job = alone_job(kind, "fp32", files, weights, args)
                if fp32_job is None:
                    continue
                before = alone(fp32_job)
                medians.setdefault((kind, "fp32"), []).append(before)
                line.append(f"{kind} fp32 {before:.2f}")
                for precision in reduced:
                    job = alone_job(kind, precision, files, weights, args)
                    if job is None:
                        continue
                    median, after = alone(job), alone(fp32_job)
                    medians.setdefault((kind, precision), []).append(median)
                    medians[(kind, "fp32")].append(after)
                    truth.setdefault((kind, precision), []).append(math.sqrt(before * after) / median)
                    line += [f"{kind} {precision} {median:.2f}", f"{kind} fp32 {after:.2f}"]
                    before = after
            print(f"alternation {i + 1}, alone (ms): " + ", ".join(line), flush=True)
    report(ours, truth, medians, args)


def _spread(values: list[float], fmt: str) -> str:
    return f"{format(statistics.median(values), fmt)} ({format(min(values), fmt)}-{format(max(values), fmt)})"


def report(ours: dict, truth: dict, medians: dict, args) -> None:
    print("\n| runtime | precision | alone median ms (range) | trtbench ratio over fp32 (range) | "
          "alone ratio (range) | off by | within 8% |")
    print("|---|---|---|---|---|---|---|")
    worst = 0.0
    for (kind, precision), want in sorted(truth.items()):
        got = ours.get((kind, precision))
        alone_ms = _spread(medians[(kind, precision)], ".2f")
        if not got:
            print(f"| {kind} | {precision} | {alone_ms} | (not a trtbench row) | {_spread(want, '.2f')}x | | |")
            continue
        off = statistics.median(got) / statistics.median(want) - 1
        worst = max(worst, abs(off))
        print(f"| {kind} | {precision} | {alone_ms} | {_spread(got, '.2f')}x | {_spread(want, '.2f')}x | {off:+.1%} | "
              f"{'yes' if abs(off) <= TARGET else 'NO'} |")
    print(f"\nworst {worst:.1%} (target {TARGET:.0%}); {args.alternations} alternations of one trtbench run then each "
          f"runtime alone ({args.warmup_s:g} s warm-up, {args.seconds:g} s timed); batch {args.batch}, "
          f"{args.threads} threads")


if __name__ == "__main__":
    main()
