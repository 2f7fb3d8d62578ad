"""Does the trtbench CLI read the same latency as torch.utils.benchmark.Timer?

Run:  .venv/bin/python benchmarks/harness_fidelity.py [--pairs 5] [--tty]

Each pair runs, one after the other, (a) the trtbench CLI in its own process on eager torchvision
resnet18 at 1x3x160x160 with 2 threads (default adaptive timing), and (b) a fresh Python process
timing the same model and input with ``Timer.blocked_autorange`` (num_threads=2), alternating which
goes first. It prints each pair's ratio (CLI median / Timer median) and the median ratio.
``--tty`` runs the CLI under a pseudo-terminal (``script``), as a user at a terminal does, so its
progress display is on. Target: ratios within 0.97-1.03.
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
    args = parser.parse_args()
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
