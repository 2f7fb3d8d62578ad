"""Does trtbench's timer agree with torch.utils.benchmark, and what does the harness itself cost?

Run:  .venv/bin/python benchmarks/harness_fidelity.py [--iterations N] [--threads T]

In one process on the CPU it times a no-op, a small MLP and torchvision resnet18 at batch 1 with
trtbench's timing loop (trtbench.timing.measure) and with torch.utils.benchmark.Timer, and prints
the ratio of medians (and of trtbench's mean to Timer's median, since Timer's median is taken
over block averages, which a skewed per-call distribution pulls above the per-call median)
and the harness's own per-iteration overhead (the no-op's median under
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


def trtbench_stats(fn, iterations: int):
    """trtbench's statistics of ``fn`` over ``iterations`` individually timed calls."""
    plan = TimingPlan(warmup=max(5, iterations // 10), iterations=iterations)
    return summarize(measure(fn, torch.device("cpu"), plan).host_ms)


def timer_median_ms(fn, min_run_time: float) -> float:
    timer = tbench.Timer(stmt="fn()", globals={"fn": fn}, num_threads=torch.get_num_threads())
    return timer.blocked_autorange(min_run_time=min_run_time).median * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=100, help="trtbench iterations per case and round")
    parser.add_argument("--min-run-time", type=float, default=1.0,
                        help="torch.utils.benchmark seconds per case and round")
    parser.add_argument("--rounds", type=int, default=7,
                        help="paired rounds (trtbench then Timer); the median of per-round ratios is reported")
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, CPU, {args.rounds} paired rounds")
    print(f"{'case':24} {'trtbench median':>16} {'Timer median':>14} {'ratio':>7} {'ratio range':>14} "
          f"{'mean ratio':>11}")
    noop_gap_us = []
    ratios_by_case = {}
    with torch.inference_mode():
        for name, fn in cases().items():
            iterations = args.iterations if name != "no-op" else 10_000
            ours, ours_mean, theirs = [], [], []
            for _ in range(args.rounds):  # paired rounds: drift on the machine hits both sides alike
                stats = trtbench_stats(fn, iterations)
                ours.append(stats.median)
                ours_mean.append(stats.mean)
                theirs.append(timer_median_ms(fn, args.min_run_time))
            ratios = [a / b for a, b in zip(ours, theirs)]
            ratios_by_case[name] = statistics.median(ratios)
            if name == "no-op":
                noop_gap_us = [(a - b) * 1e3 for a, b in zip(ours, theirs)]
            mean_ratio = statistics.median(a / b for a, b in zip(ours_mean, theirs))
            print(f"{name:24} {statistics.median(ours):13.4f} ms {statistics.median(theirs):11.4f} ms "
                  f"{ratios_by_case[name]:7.3f} {min(ratios):6.3f}-{max(ratios):.3f} {mean_ratio:11.3f}")
    overhead_us = statistics.median(noop_gap_us)
    print(f"\nharness overhead per iteration: {overhead_us:.3f} us (target < {OVERHEAD_TARGET_US} us)")
    lo, hi = RATIO_TARGET
    for name, ratio in ratios_by_case.items():
        if name != "no-op":
            verdict = "within" if lo <= ratio <= hi else "OUTSIDE"
            print(f"{name}: median paired ratio {ratio:.3f} {verdict} target {lo}-{hi}")


if __name__ == "__main__":
    main()
