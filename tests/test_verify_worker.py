"""The verify worker (a fresh process per artifact) reports load problems as a reason, never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from trtbench.verify_worker import sha256_of

WORKER = Path(__file__).resolve().parents[1] / "trtbench" / "verify_worker.py"


def run_worker(tmp_path, device: str, imports: list[str]) -> dict:
    """Verify a small TorchScript artifact, with a module on the path whose import raises KeyError."""
    (tmp_path / "broken_trt.py").write_text("raise KeyError('getpwuid(): uid not found: 43210')\n")
    model = torch.jit.trace(torch.nn.Linear(3, 2).eval(), (torch.randn(1, 3),))
    path, reference = tmp_path / "m.ts", tmp_path / "m.ref.pt"
    torch.jit.save(model, str(path))
    x = torch.randn(2, 3)
    torch.save({"inputs": [x], "outputs": [model(x).detach()]}, reference)
    job = {"path": str(path), "sha256": sha256_of(path), "loader": "torch.jit.load", "imports": imports,
           "device": device, "reference": str(reference), "atol": 1e-5, "rtol": 1e-5}
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    done = subprocess.run([sys.executable, str(WORKER), json.dumps(job)], capture_output=True, text=True, env=env)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_imports_that_fail_with_any_error_are_a_reason(tmp_path):
    result = run_worker(tmp_path, "cpu", ["broken_trt"])
    assert not result["ok"]
    assert result["error"] == ("cannot import broken_trt, which loading this artifact needs "
                               "(KeyError: 'getpwuid(): uid not found: 43210')")


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_cuda_is_checked_before_imports_that_need_it(tmp_path):
    result = run_worker(tmp_path, "cuda", ["broken_trt"])
    assert result == {"ok": False, "error": "this artifact was saved for CUDA and this machine has no CUDA device",
                      "warnings": result["warnings"]}


def test_a_loadable_artifact_still_verifies(tmp_path):
    assert run_worker(tmp_path, "cpu", [])["ok"]
