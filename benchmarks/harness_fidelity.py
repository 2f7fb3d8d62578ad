"""Does the trtbench CLI read the same latency as torch.utils.benchmark.Timer?

Run:  .venv/bin/python benchmarks/harness_fidelity.py [--pairs 5] [--tty]
      .venv/bin/python benchmarks/harness_fidelity.py --results DIR [--variants eager,compiled] [--json OUT]

Each pair runs, one after the other, (a) the trtbench CLI in its own process on eager torchvision
resnet18 at 1x3x160x160 with 2 threads (default adaptive timing), and (b) a fresh Python process
timing the same model and input with ``Timer.blocked_autorange`` (num_threads=2), alternating which
goes first. It prints each pair's ratio (CLI median / Timer median) and the median ratio.
``--tty`` runs the CLI under a pseudo-terminal (``script``), as a user at a terminal does, so its
progress display is on. Target: ratios within 0.97-1.03.

``--results DIR`` (scripts/gpu_check.sh) reads trtbench's medians from a run already made (a torchvision
model at one static shape and precision, ``--point``) and times each variant of ``--variants`` (eager,
compiled: ``torch.compile`` with its defaults) alone in a fresh process of its own: ``Timer.blocked_autorange``
and, on CUDA, ``triton.testing.do_bench`` (median); same model, shape, dtype, threads and cuDNN autotuning as the
run. It prints each ratio (trtbench median / reference) and writes them as JSON to ``--json``.
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

TARGET = (0.97, 1.03)
THREADS = 2
TIMER_SNIPPET = """
import torch, torchvision, torch.utils.benchmark as tb
torch.manual_seed(0)
model = torchvision.models.resnet18(weights=None).eval()
x = torch.randn(1, 3, 160, 160)
with torch.inference_mode():
    for _ in range(5):
        model(x)
    t = tb.Timer(stmt="model(x)", globals={"model": model, "x": x}, num_threads=%d)
    print(t.blocked_autorange(min_run_time=%f).median * 1e3)
"""


REFERENCE_SNIPPET = """
import json, sys, torch, torchvision
import torch.utils.benchmark as tb
spec = json.loads(sys.argv[1])
torch.manual_seed(0)
torch.set_num_threads(spec["threads"])
torch.backends.cudnn.benchmark = spec["cudnn_benchmark"]
device, dtype = torch.device(spec["device"]), getattr(torch, spec["dtype"])
model = getattr(torchvision.models, spec["model"])(weights=None).eval().to(device, dtype)
x = torch.randn(*spec["shape"], device=device, dtype=dtype)
if spec["variant"] == "compiled":
    model = torch.compile(model)
out = {}
with torch.inference_mode():
    for _ in range(5):
        model(x)
    if device.type == "cuda":
        torch.cuda.synchronize()
    timer = tb.Timer(stmt="model(x)", globals={"model": model, "x": x}, num_threads=spec["threads"])
    out["timer_ms"] = timer.blocked_autorange(min_run_time=spec["min_run_time"]).median * 1e3
    if device.type == "cuda":
        from triton.testing import do_bench
        out["do_bench_ms"] = do_bench(lambda: model(x), rep=int(spec["min_run_time"] * 1e3), return_mode="median")
print(json.dumps(out))
"""


def run_medians(results: Path, point: str, precision: str) -> tuple[dict, dict]:
    """trtbench's median per variant at ``point`` and ``precision`` of the run in ``results``, and what the reference
    processes need to time the same call (model, shape, dtype, device, threads)."""
    data = json.loads((results / "results.json").read_text())
    medians, spec = {}, {}
    for record in data["records"]:
        case = record["case"]
        if case["point"] != point or case["precision"] != precision or not record.get("rounds"):
            continue
        medians[case["variant"]] = statistics.median(s for r in record["rounds"] for s in r)
        spec = {"shape": case["input_shapes"][0], "device": case["device"], "threads": case["threads"]}
    config = data["runs"][-1]["config"]
    spec.update(model=(config.get("model") or config["models"][0])["name"], dtype={"fp32": "float32", "fp16": "float16"}[precision],
                cudnn_benchmark=config["benchmark"].get("cudnn_benchmark", True))
    return medians, spec


def reference_medians(spec: dict) -> dict:
    """The references' medians (ms) of one variant, timed alone in a fresh process."""
    out = subprocess.run([sys.executable, "-c", REFERENCE_SNIPPET, json.dumps(spec)], check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def against_references(args) -> None:
    """``--results``: each variant's trtbench median against its references, within the target or not."""
    medians, spec = run_medians(Path(args.results), args.point, args.precision)
    lo, hi = TARGET
    found = {"target": list(TARGET), "spec": spec, "variants": {}}
    for variant in args.variants.split(","):
        if variant not in medians:
            found["variants"][variant] = {"error": f"no timed {variant} row at {args.point} {args.precision}"}
            print(f"{variant}: {found['variants'][variant]['error']}")
            continue
        try:
            refs = reference_medians({**spec, "variant": variant, "min_run_time": args.min_run_time})
        except subprocess.CalledProcessError as err:
            found["variants"][variant] = {"error": f"reference process failed: {err.stderr.strip()[-300:]}"}
            print(f"{variant}: {found['variants'][variant]['error']}")
            continue
        ratios = {name.removesuffix("_ms"): medians[variant] / ms for name, ms in refs.items()}
        found["variants"][variant] = {"trtbench_ms": medians[variant], **refs, "ratios": ratios,
                                      "within": all(lo <= r <= hi for r in ratios.values())}
        print(f"{variant}: trtbench {medians[variant]:.3f} ms; " + ", ".join(
            f"{name} {refs[name + '_ms']:.3f} ms (ratio {r:.3f})" for name, r in ratios.items()))
    if args.json:
        Path(args.json).write_text(json.dumps(found, indent=1))


def cli_median(config: Path, out: Path, tty: bool) -> float:
    cmd = [sys.executable, "-m", "trtbench", "--config", str(config), "--output", str(out), "--fresh"]
    if tty:  # a pseudo-terminal: the progress display runs as it does for a user
        subprocess.run(["script", "-qec", shlex.join(cmd), "/dev/null"], check=True, capture_output=True)
    else:
        subprocess.run(cmd + ["--quiet"], check=True, capture_output=True)
    data = json.loads((out / "results.json").read_text())
    record = data["records"][0]
    samples = [s for r in record["rounds"] for s in r]
    return statistics.median(samples)


def timer_median(min_run_time: float) -> float:
    out = subprocess.run([sys.executable, "-c", TIMER_SNIPPET % (THREADS, min_run_time)], check=True,
                         capture_output=True, text=True).stdout
    return float(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--min-run-time", type=float, default=5.0, help="Timer.blocked_autorange seconds")
    parser.add_argument("--tty", action="store_true", help="run the CLI under a pseudo-terminal")
    parser.add_argument("--results", help="a trtbench run's folder: its medians against fresh-process references")
    parser.add_argument("--variants", default="eager,compiled", help="with --results: the variants to check")
    parser.add_argument("--point", default="opt", help="with --results: the point")
    parser.add_argument("--precision", default="fp32", help="with --results: the precision (fp32, fp16)")
    parser.add_argument("--json", help="with --results: write the figures here")
    args = parser.parse_args()
    if args.results:
        return against_references(args)
    work = Path(tempfile.mkdtemp(prefix="fidelity."))
    config = work / "resnet18.yaml"
    config.write_text(yaml.safe_dump({
        "name": "fidelity", "model": {"source": "torchvision", "name": "resnet18"},
        "inputs": [{"name": "input", "shape": [1, 3, 160, 160]}], "device": "cpu", "variants": ["eager"],
        "benchmark": {"threads": THREADS, "measure_ceiling": False},
        "output": {"save_artifacts": False, "cold_start": False}}))
    print(f"CLI process vs Timer process, resnet18 1x3x160x160, {THREADS} threads, {args.pairs} pairs"
          f"{' (CLI under a pseudo-terminal)' if args.tty else ''}")
    ratios = []
    for i in range(args.pairs):
        if i % 2 == 0:
            cli = cli_median(config, work / f"out{i}", args.tty)
            timer = timer_median(args.min_run_time)
        else:
            timer = timer_median(args.min_run_time)
            cli = cli_median(config, work / f"out{i}", args.tty)
        ratios.append(cli / timer)
        print(f"pair {i + 1}: CLI {cli:.2f} ms, Timer {timer:.2f} ms, ratio {ratios[-1]:.3f}", flush=True)
    lo, hi = TARGET
    median = statistics.median(ratios)
    print(f"median ratio {median:.3f} (range {min(ratios):.3f}-{max(ratios):.3f}); "
          f"{'within' if lo <= median <= hi else 'OUTSIDE'} target {lo}-{hi}")


if __name__ == "__main__":
    main()
