"""Are trtbench's speedups across runtimes the speedups of each runtime deployed alone?

Run:  .venv/bin/python benchmarks/cross_runtime.py [--alternations 3] [--seconds 6]
          [--trtbench-src DIR] [--isolation process|in_process|unset] [--sets eager+ort,...]
          [--allocator default|tuned|jemalloc|tcmalloc] [--threads 2] [--processes N]

The truth: each runtime alone in a fresh process of its own, timed by this file's own plain
loop (not trtbench's timing code), on the files trtbench saved (``ort_fp32.onnx``, the OpenVINO
IR; its CPU plugin pinned to f32 as trtbench's fp32 row is, since on CPUs with bf16 units OpenVINO
computes in bf16 by default: 3.9 against 7.6 ms on a Zen 5); eager and torch.compile build resnet18 in
their process and load its weights from a checkpoint file-backed (``torch.load(mmap=True)``, as
safetensors and trtbench's workers load weights): under glibc's default state how a process loads its
weights moves the odds of compiled's page-fault mode (benchmarks/NOTES.md). Eager alone runs before
and after each other runtime alone (eager, ort, eager, openvino, eager, ...); the truth's speedup is,
per alternation, the geometric mean of the two eager medians around the runtime over its median, so the
VM's drift across the alone processes cancels (on a Zen 5 VM whose speed drifted 10% within minutes,
eager-first-only truths ranged 1.75-2.0x), and its median over the alternations.

trtbench: one run per set of variants (eager x ort, eager x openvino, eager x ort x openvino,
eager x compiled, and all together), resnet18 at 1x3x224x224, 2 threads (``--threads``; the alone processes
too), default adaptive timing, the config's default replicate processes (``--processes``), repeated in every alternation
before the alone processes, so that the machine's drift falls on both sides alike. For each set it prints the median
over its runs of the speedup trtbench reports (its two-level estimate) next to the truth's, with their ranges, and
eager's median next to eager alone. Targets: every speedup within 3% of the truth, eager's median within 5% of eager
alone.

``--allocator`` is trtbench's ``benchmark.allocator``, and every alone process starts in the same state
(:func:`trtbench.core.allocator.process_env`: under ``default`` the parent's ``LD_PRELOAD`` and
``MALLOC_*`` knobs are removed; ``tuned`` fixes glibc's thresholds), so each side's processes run as
a deployment with that setting would. A runtime whose speed differs from process to process shows it here on both sides:
on the 2-core Zen 3 VM (2026-11-24), torch.compile'd resnet18 at batch 1 ran either about 1.05x or about 1.35x eager's
time per fresh process, alone as well (1 of 6 and 2 of 4 alone processes fast, eager steady), so trtbench's worker
processes landed in the fast mode more often (11 of 16 against 1 of 8 alone). The slow mode is page faults: about 3700
minor faults per call, because glibc ``munmap``s Inductor's intermediate buffers (above its mmap threshold) after each
call and the next call faults them in again; a process whose allocation history raised glibc's dynamic threshold has
none (with ``MALLOC_MMAP_THRESHOLD_=268435456`` every process ran 31-32 ms, 0 faults). Both sides print page faults per
call, so each process's mode shows; ``--allocator tuned`` gives every process on both sides one allocator state (with
it, 3 alternations of eager+compiled and all agreed within 1.6%, compiled included). ``--trtbench-src`` runs another
checkout's trtbench (e.g. the code before a change), with ``--isolation unset`` for a tree that has no such setting. Run
it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import torch
import torchvision
import yaml

from trtbench.core.allocator import ALLOCATORS, process_env
from trtbench.results.resultset import ResultSet

TARGET = 0.03  # a speedup against the truth's
EAGER_TARGET = 0.05  # eager's median against eager alone
THREADS = 2
SHAPE = [1, 3, 224, 224]
SETS = {"eager+ort": ["eager", "ort"], "eager+openvino": ["eager", "openvino"],
        "eager+ort+openvino": ["eager", "ort", "openvino"], "eager+compiled": ["eager", "compiled"],
        "all": ["eager", "ort", "openvino", "compiled"]}

# One runtime alone: build or load it, prepare the input outside the timed loop, warm up, then
# time single calls for a while. Plain perf_counter_ns, as a deployment would measure itself.
ALONE = r'''
import json, resource, sys, time
import numpy as np
import torch
kind, path, seconds, threads = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
shape = json.loads(sys.argv[5])
torch.set_num_threads(threads)
x = torch.randn(*shape)
if kind in ("eager", "compiled"):
    import torchvision
    model = torchvision.models.resnet18().eval()
    # its weights from a checkpoint, file-backed as safetensors and trtbench's workers load them
    model.load_state_dict(torch.load(path, weights_only=True, mmap=True))
    if kind == "compiled":
        model = torch.compile(model)
    def call():
        with torch.inference_mode():
            model(x)
elif kind == "ort":
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    feed = {session.get_inputs()[0].name: x.numpy()}
    def call():
        session.run(None, feed)
elif kind == "openvino":
    import openvino as ov
    # f32 as trtbench's fp32 row: where the CPU computes bf16 natively (AVX512_BF16, AMX), OpenVINO's default is bf16
    compiled = ov.Core().compile_model(path, "CPU", {"INFERENCE_NUM_THREADS": threads, "PERFORMANCE_HINT": "LATENCY",
                                                     "INFERENCE_PRECISION_HINT": "f32"})
    request = compiled.create_infer_request()
    feed = {0: x.numpy()}
    def call():
        request.infer(feed)
else:
    raise SystemExit(f"unknown kind {kind}")
start = time.perf_counter()
while time.perf_counter() - start < 2.0:  # warm-up: compile, caches, thread pools
    call()
samples = []
faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
start = time.perf_counter()
while time.perf_counter() - start < seconds or len(samples) < 20:
    t0 = time.perf_counter_ns()
    call()
    samples.append((time.perf_counter_ns() - t0) / 1e6)
faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults) / len(samples)
print(json.dumps({"median_ms": float(np.median(samples)), "calls": len(samples), "faults_per_call": faults}))
'''


def alone(kind: str, path: str, seconds: float, allocator: str, threads: int) -> tuple[float, float]:
    """(median ms, minor page faults per call) of ``kind`` alone in a fresh process started in ``allocator``'s
    state, on ``threads`` threads."""
    out = subprocess.run([sys.executable, "-c", ALONE, kind, path, str(seconds), str(threads), json.dumps(SHAPE)],
                         check=True, capture_output=True, text=True, env=process_env(allocator, dict(os.environ)))
    measured = json.loads(out.stdout.strip().splitlines()[-1])
    return measured["median_ms"], measured["faults_per_call"]


def run_trtbench(variants: list[str], out: Path, src: str | None, args) -> dict:
    """Per variant: (median ms, the speedup over eager fp32 the run reports, page faults per call), read back from
    its results."""
    benchmark = {"threads": args.threads, "measure_ceiling": False}
    if args.processes:
        benchmark["processes"] = args.processes
    if args.isolation != "unset":
        benchmark["isolation"] = args.isolation
    if args.allocator != "default":
        benchmark["allocator"] = args.allocator
    config = {"name": "cross-runtime", "model": {"source": "torchvision", "name": "resnet18"},
              "inputs": [{"name": "input", "dtype": "float32", "min_shape": SHAPE, "opt_shape": SHAPE,
                          "max_shape": SHAPE}],
              "device": "cpu", "precisions": ["fp32"], "variants": variants, "benchmark": benchmark,
              "output": {"dir": str(out), "save_artifacts": True, "cold_start": False}}
    path = out.parent / f"{out.name}.yaml"
    path.write_text(yaml.safe_dump(config))
    env = dict(os.environ)
    if src:
        env["PYTHONPATH"] = os.pathsep.join([src, env.get("PYTHONPATH", "")])
    # run in the temporary folder: `python -m` puts its working directory first on sys.path, where a checkout's
    # own trtbench would shadow --trtbench-src
    subprocess.run([sys.executable, "-m", "trtbench", "--config", str(path), "--fresh", "--quiet"], check=True,
                   capture_output=True, env=env, cwd=out.parent)
    results = ResultSet.load(out)
    measured = {}
    for record in results:
        if record.status == "ok" and record.timed:
            speedup = results.speedup(record)
            measured[record.case.variant] = (record.stats.median, speedup.value if speedup else None,
                                             record.metrics.get("isolation", {}).get("minor_faults_per_call_median"))
    return measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--alternations", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=6.0, help="timed seconds per alone process")
    parser.add_argument("--trtbench-src", help="a trtbench checkout to run instead of the installed one")
    parser.add_argument("--isolation", default="process", choices=["process", "in_process", "unset"])
    parser.add_argument("--sets", default=",".join(SETS), help=f"comma-separated, of: {', '.join(SETS)}")
    parser.add_argument("--threads", type=int, default=THREADS,
                        help="threads of trtbench's runs and of every alone process")
    parser.add_argument("--processes", type=int, default=None,
                        help="trtbench's benchmark.processes (default: the config default, 3)")
    parser.add_argument("--allocator", default="default", choices=list(ALLOCATORS),
                        help="trtbench's benchmark.allocator, and the state every alone process starts in")
    args = parser.parse_args()
    sets = {name: SETS[name] for name in args.sets.split(",")}
    runs: dict[str, list[dict]] = {name: [] for name in sets}  # set -> one {variant: (median, rounds)} per alternation
    truth_runs: dict[str, list[float]] = {}  # runtime -> its medians alone (eager: before and after each other)
    truth_ratios: dict[str, list[float]] = {}  # runtime -> eager alone around it over it alone, per alternation
    with tempfile.TemporaryDirectory(prefix="cross-runtime-") as tmp:
        tmp = Path(tmp)
        weights = tmp / "resnet18.pt"  # the checkpoint eager and compiled alone load, as a deployment loads one
        torch.save(torchvision.models.resnet18().state_dict(), weights)
        files = {"eager": str(weights), "compiled": str(weights)}
        for i in range(args.alternations):  # trtbench's runs and the alone processes alternate, so drift hits both
            for name, variants in sets.items():
                out = tmp / f"{name.replace('+', '_')}_{i}"
                runs[name].append(run_trtbench(variants, out, args.trtbench_src, args))
                print(f"alternation {i + 1}, trtbench {name}: "
                      + ", ".join(f"{v} {m:.2f} ms ({f if f is None else round(f)} page faults/call"
                                  + (f", speedup {x:.3f}x)" if x is not None and v != "eager" else ")")
                                  for v, (m, x, f) in runs[name][-1].items()), flush=True)
                for variant, suffix in (("ort", "onnx"), ("openvino", "xml")):
                    found = sorted((out / "artifacts").glob(f"{variant}_fp32.{suffix}"))
                    if found and variant not in files:  # the first run's file (the folders stay till the end)
                        files[variant] = str(found[0])
            # eager alone before and after each other runtime alone (eager, ort, eager, openvino, eager, ...):
            # each runtime's truth is over the geometric mean of the eager processes around it, so the VM's
            # drift over the minute the alone processes take cancels, as trtbench's paired rounds cancel it
            kinds = sorted({v for variants in sets.values() for v in variants} & set(files) - {"eager"})
            eager_before, faults = alone("eager", files["eager"], args.seconds, args.allocator, args.threads)
            truth_runs.setdefault("eager", []).append(eager_before)
            line = [f"eager {eager_before:.2f} ms ({faults:.0f})"]
            for kind in kinds:
                median, faults = alone(kind, files[kind], args.seconds, args.allocator, args.threads)
                eager_after, eager_faults = alone("eager", files["eager"], args.seconds, args.allocator, args.threads)
                truth_runs.setdefault(kind, []).append(median)
                truth_runs["eager"].append(eager_after)
                truth_ratios.setdefault(kind, []).append(math.sqrt(eager_before * eager_after) / median)
                line += [f"{kind} {median:.2f} ms ({faults:.0f})", f"eager {eager_after:.2f} ms ({eager_faults:.0f})"]
                eager_before = eager_after
            print(f"alternation {i + 1}, alone (page faults/call): " + ", ".join(line), flush=True)
    report(runs, truth_runs, truth_ratios, args)


def _spread(values: list[float], fmt: str) -> str:
    return f"{format(statistics.median(values), fmt)} ({format(min(values), fmt)}-{format(max(values), fmt)})"


def report(runs: dict[str, list[dict]], truth_runs: dict[str, list[float]], truth_ratios: dict[str, list[float]],
           args) -> None:
    """Per set and variant: trtbench's median speedup over its runs against the truth's median speedup
    over the alternations (the eager-alone medians around the runtime alone over its median)."""
    truth_eager = statistics.median(truth_runs["eager"])
    print()
    print("| set | variant | trtbench median ms (range) | alone median ms (range) | trtbench speedup (range) | "
          "alone speedup (range) | speedup off by | within target |")
    print("|---|---|---|---|---|---|---|---|")
    worst = 0.0
    for name, per_run in runs.items():
        for variant in per_run[0]:
            medians = [run[variant][0] for run in per_run if variant in run]
            alone_ms = truth_runs[variant]
            if variant == "eager":
                off = statistics.median(medians) / truth_eager - 1
                print(f"| {name} | eager | {_spread(medians, '.2f')} | {_spread(alone_ms, '.2f')} | | | "
                      f"median {off:+.1%} | {'yes' if abs(off) <= EAGER_TARGET else 'NO'} |")
            else:
                got = [run[variant][1] for run in per_run if variant in run and run[variant][1] is not None]
                want = truth_ratios[variant]
                off = statistics.median(got) / statistics.median(want) - 1
                print(f"| {name} | {variant} | {_spread(medians, '.2f')} | {_spread(alone_ms, '.2f')} | "
                      f"{_spread(got, '.3f')}x | {_spread(want, '.3f')}x | {off:+.1%} | "
                      f"{'yes' if abs(off) <= TARGET else 'NO'} |")
            worst = max(worst, abs(off))
    print(f"\nworst deviation {worst:.1%} (targets: speedups {TARGET:.0%}, eager {EAGER_TARGET:.0%}); allocator "
          f"{args.allocator}; {args.alternations} alternations, each: one trtbench run per set, then each runtime "
          f"alone ({args.seconds:g} s timed)")


if __name__ == "__main__":
    main()
