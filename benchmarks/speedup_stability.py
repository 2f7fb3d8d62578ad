"""Do speedups hold from one run to the next on a noisy machine?

Run:  .venv/bin/python benchmarks/speedup_stability.py [--pairs 3] [--mode adaptive|fixed]

Each pair is two separate CLI runs of the same config (torchvision resnet18 at 1x3x112x112 and
4x3x112x112, eager/traced/scripted, default threads). For each variant and shape it prints the
speedup over eager in both runs and their disagreement |a/b - 1|, and each run's absolute eager
median, so a speedup that agrees while absolute medians drift shows the interleaving at work.
Target: every disagreement within 3%.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

from trtbench.results.resultset import ResultSet

TARGET = 0.03


def run(config: Path, out: Path) -> ResultSet:
    subprocess.run([sys.executable, "-m", "trtbench", "--config", str(config), "--output", str(out), "--fresh",
                    "--quiet"], check=True, capture_output=True)
    return ResultSet.load(out)


def speedups(results: ResultSet) -> dict:
    out = {}
    for record in results:
        interval = results.speedup(record)
        if interval is not None:
            out[(record.case.variant, record.case.point)] = interval
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--mode", default="adaptive", choices=("adaptive", "fixed"))
    parser.add_argument("--iterations", type=int, default=100, help="fixed mode: calls per variant")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="stability."))
    config = work / "resnet18.yaml"
    config.write_text(yaml.safe_dump({
        "name": "stability", "model": {"source": "torchvision", "name": "resnet18"},
        "inputs": [{"name": "input", "min_shape": [1, 3, 112, 112], "opt_shape": [1, 3, 112, 112],
                    "max_shape": [4, 3, 112, 112]}],
        "device": "cpu", "variants": ["eager", "traced", "scripted"],
        "benchmark": {"mode": args.mode, "iterations": args.iterations, "shapes": ["min", "max"],
                      "measure_ceiling": False},
        "output": {"save_artifacts": False, "cold_start": False}}))
    worst_overall = 0.0
    for pair in range(args.pairs):
        a, b = (run(config, work / f"p{pair}{side}") for side in "ab")
        sa, sb = speedups(a), speedups(b)
        eager = {side: {r.case.point: r.stats.median for r in rs if r.case.variant == "eager" and r.timed}
                 for side, rs in (("a", a), ("b", b))}
        print(f"pair {pair + 1}: eager medians run a {eager['a']}, run b {eager['b']} (ms)")
        worst = 0.0
        for key in sorted(sa):
            if key in sb:
                gap = abs(sa[key].value / sb[key].value - 1)
                worst = max(worst, gap)
                print(f"  {key[0]:9} {key[1]}: {sa[key].value:.3f}x [{sa[key].low:.3f}-{sa[key].high:.3f}] vs "
                      f"{sb[key].value:.3f}x [{sb[key].low:.3f}-{sb[key].high:.3f}]  disagreement {gap:.1%}")
        print(f"  worst disagreement {worst:.1%}", flush=True)
        worst_overall = max(worst_overall, worst)
    print(f"worst over {args.pairs} pairs: {worst_overall:.1%} ({'within' if worst_overall <= TARGET else 'OUTSIDE'} "
          f"target {TARGET:.0%})")


if __name__ == "__main__":
    main()
