"""A real environment change, attributed: the same config in two environments that differ only in their ONNX
Runtime release, 3 runs each, appended to one history; the ort row's step names ``onnxruntime A -> B``, or no step
is found and both sides' intervals are printed.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/history_ort_versions.py [OLD [NEW [WORK_DIR]]]

OLD defaults to 1.31.1 and NEW to the venv's own release. The second environment is the venv itself; the first is
the venv with OLD installed into an overlay folder first on PYTHONPATH (``pip install --target``: every other
package is the venv's, so only onnxruntime differs). Needs PyPI for OLD; takes a few minutes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
CONFIG = {"name": "ort-versions", "model": {"source": "torchvision", "name": "resnet18"},
          "inputs": [{"name": "x", "dtype": "float32", "shape": [1, 3, 112, 112]}], "device": "cpu",
          "precisions": ["fp32"], "variants": ["eager", "ort"],
          "benchmark": {"mode": "fixed", "warmup": 5, "iterations": 30, "processes": 3},
          "output": {"save_artifacts": False, "cold_start": False}}


def trtbench(overlay: Path | None, *args: str) -> subprocess.CompletedProcess:
    path = [str(overlay)] if overlay else []
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([*path, str(REPO)]))
    return subprocess.run([sys.executable, "-m", "trtbench", *args], capture_output=True, text=True, env=env)


def main() -> int:
    old = sys.argv[1] if len(sys.argv) > 1 else "1.31.1"
    new = sys.argv[2] if len(sys.argv) > 2 else metadata.version("onnxruntime")
    work = Path(sys.argv[3] if len(sys.argv) > 3 else tempfile.mkdtemp(prefix="history-ort-"))
    work.mkdir(parents=True, exist_ok=True)
    overlay = work / f"onnxruntime-{old}"
    if not overlay.is_dir():
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(overlay),
                        f"onnxruntime=={old}"], check=True)
    if new != metadata.version("onnxruntime"):
        print(f"NEW must be this venv's onnxruntime ({metadata.version('onnxruntime')})")
        return 2
    config, history = work / "ort.yaml", str(work / "history.sqlite")
    config.write_text(yaml.safe_dump(CONFIG))
    for i, (env, release) in enumerate([(overlay, old)] * 3 + [(None, new)] * 3, start=1):
        done = trtbench(env, "run", "--config", str(config), "--output", str(work / f"run{i}"), "--history", history,
                        "--label", f"ort-{release}", "--quiet")
        print(f"run {i} (onnxruntime {release}): exit {done.returncode}")
        if done.returncode not in (0, 1):
            print(done.stderr)
            return 1
    shown = trtbench(None, "history", "--history", history, "--variant", "ort")
    print(shown.stdout)
    steps = [line for line in shown.stdout.splitlines() if line.strip().startswith("step")]
    named = [line for line in steps if f"onnxruntime {old} -> {new}" in line]
    if steps:
        print(f"{len(named)} of {len(steps)} step(s) name onnxruntime {old} -> {new}")
        return 0 if named else 1
    from trtbench import api

    print(f"no step; each ort series' points (runs 1-3: onnxruntime {old}; runs 4-6: {new}):")
    for series in api.history_series(history, api.HistoryQuery(variant="ort")):
        values = ", ".join(f"{p.value.value:.4g} [{p.value.low:.4g}, {p.value.high:.4g}]" for p in series.points
                           if p.value is not None)
        print(f"  {series.key.label}: {values}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
