"""A real step, found: a toy model whose call sleeps 10 ms runs 4 times, then 3 times at 11.5 ms
(benchmarks/sleeper_model.py), each run appended to a fresh history and gated, then run 5 accepted.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/history_step.py [WORK_DIR]

Expected (docs/comparing.md): `trtbench history` shows one step, at run 5, from about 10 to 11.5 ms with
intervals, and none in runs 1-4; `gate` exits 0 on runs 1-4 and 1 on runs 5-7; after `accept` of run 5, run 7
exits 0. Prints each command's exit code, the history's lines, and PASS or FAIL; takes about 2 minutes.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
CONFIG = {"name": "sleeper", "model": {"source": "python", "name": "sleeper_model:sleeper"},
          "inputs": [{"name": "x", "dtype": "float32", "shape": [1, 8]}], "device": "cpu", "precisions": ["fp32"],
          "variants": ["eager"], "benchmark": {"mode": "fixed", "warmup": 2, "iterations": 20, "processes": 3},
          "output": {"save_artifacts": False, "cold_start": False}}


def trtbench(*args: str, sleep_ms: float = 10.0) -> subprocess.CompletedProcess:
    env = dict(os.environ, SLEEPER_MS=str(sleep_ms),
               PYTHONPATH=os.pathsep.join([str(HERE), str(HERE.parent), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "trtbench", *args], capture_output=True, text=True, env=env)


def main() -> int:
    work = Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="history-step-"))
    work.mkdir(parents=True, exist_ok=True)
    config, history = work / "sleeper.yaml", str(work / "history.sqlite")
    config.write_text(yaml.safe_dump(CONFIG))
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs; work in {work}")
    gates = []
    for i in range(1, 8):
        sleep_ms = 10.0 if i <= 4 else 11.5
        out = work / f"run{i}"
        done = trtbench("run", "--config", str(config), "--output", str(out), "--history", history,
                        "--label", f"run{i}", "--quiet", sleep_ms=sleep_ms)
        if done.returncode != 0:
            print(done.stdout, done.stderr)
            return 1
        gate = trtbench("gate", str(out), "--history", history)
        gates.append(gate.returncode)
        print(f"run {i} ({sleep_ms} ms): gate exit {gate.returncode}\n{gate.stdout.rstrip()}")
    shown = trtbench("history", "--history", history, "--figure", "median")
    print(shown.stdout)
    run5 = trtbench("history", "runs", "--history", history).stdout.splitlines()[4].split()[0]
    trtbench("history", "accept", run5, "--history", history)
    after = trtbench("gate", str(work / "run7"), "--history", history).returncode
    print(f"after accepting run 5 ({run5}): run 7's gate exits {after}")
    steps = [line for line in shown.stdout.splitlines() if line.strip().startswith("step")]
    ok = (gates == [0, 0, 0, 0, 1, 1, 1] and after == 0 and len(steps) == 1 and run5 in steps[0])
    print("PASS" if ok else f"FAIL: gates {gates}, after accept {after}, steps {steps}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
