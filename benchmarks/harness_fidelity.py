"""Does trtbench's timer agree with torch.utils.benchmark, and what does the harness itself cost?

Run:  .venv/bin/python benchmarks/harness_fidelity.py [--iterations N] [--threads T]

In one process on the CPU it times a no-op, a small MLP and torchvision resnet18 at batch 1 with
trtbench's timing loop (trtbench.timing.measure) and with torch.utils.benchmark.Timer, and prints
the ratio of medians and the harness's own per-iteration overhead (the no-op's median under
trtbench's loop minus the no-op's median under Timer, which amortises its loop over many calls).

Targets: ratio of medians within 0.97-1.03 for the real modules; overhead under 5 us per iteration.
"""

from __future__ import annotations

import argparse
import statistics

import torch
import torch.utils.benchmark as tbench
import torchvision

from trtbench.stats import summarize
from trtbench.timing import TimingPlan, measure

RATIO_TARGET = (0.97, 1.03)
OVERHEAD_TARGET_US = 5.0


def cases() -> dict:
    """Name -> zero-argument callable running one forward pass (or nothing)."""
    mlp = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)).eval()
    mlp_input = torch.randn(8, 256)
    resnet = torchvision.models.resnet18(weights=None).eval()
    image = torch.randn(1, 3, 224, 224)
    return {
        "no-op": lambda: None,
        "mlp 8x256": lambda: mlp(mlp_input),
        "resnet18 1x3x224x224": lambda: resnet(image),
    }


def trtbench_median_ms(fn, iterations: int) -> float:
    plan = TimingPlan(warmup=max(5, iterations // 10), iterations=iterations)
    return summarize(measure(fn, torch.device("cpu"), plan).host_ms).median


def timer_median_ms(fn, min_run_time: float) -> float:
    timer = tbench.Timer(stmt="fn()", globals={"fn": fn}, num_threads=torch.get_num_threads())
    return timer.blocked_autorange(min_run_time=min_run_time).median * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=200, help="trtbench iterations per case")
    parser.add_argument("--min-run-time", type=float, default=3.0, help="torch.utils.benchmark seconds per case")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds; the median of rounds is reported")
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, CPU")
    print(f"{'case':24} {'trtbench median':>16} {'Timer median':>14} {'ratio':>7}")
    rows = {}
    with torch.inference_mode():
        for name, fn in cases().items():
            iterations = args.iterations if name != "no-op" else 10_000
            ours, theirs = [], []
            for _ in range(args.rounds):  # alternate so drift on the machine hits both alike
                ours.append(trtbench_median_ms(fn, iterations))
                theirs.append(timer_median_ms(fn, args.min_run_time / args.rounds))
            ours, theirs = statistics.median(ours), statistics.median(theirs)
            rows[name] = (ours, theirs)
            print(f"{name:24} {ours:13.4f} ms {theirs:11.4f} ms {ours / theirs:7.3f}")
    overhead_us = (rows["no-op"][0] - rows["no-op"][1]) * 1e3
    print(f"\nharness overhead per iteration: {overhead_us:.3f} us (target < {OVERHEAD_TARGET_US} us)")
    lo, hi = RATIO_TARGET
    for name, (ours, theirs) in rows.items():
        if name != "no-op":
            verdict = "within" if lo <= ours / theirs <= hi else "OUTSIDE"
            print(f"{name}: ratio {ours / theirs:.3f} {verdict} target {lo}-{hi}")


if __name__ == "__main__":
    main()
