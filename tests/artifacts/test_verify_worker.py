"""The verify worker (each artifact in a fresh fork of a torch-only process) reports load problems as a reason,
never a traceback, and survives a load that crashes or hangs."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from trtbench.artifacts.store import FreshProcesses, verify_artifact
from trtbench.artifacts.verify import sha256_of


def saved_entry(tmp_path, device: str, imports: list[str], model=None, example=None) -> dict:
    """A manifest entry for a small saved artifact in ``tmp_path`` (TorchScript unless ``model`` is a program)."""
    example = torch.randn(2, 3) if example is None else example
    if model is None:
        model = torch.jit.trace(torch.nn.Linear(3, 2).eval(), (torch.randn(1, 3),))
        path, loader = tmp_path / "m.ts", "torch.jit.load"
        torch.jit.save(model, str(path))
        output = model(example)
    else:
        path, loader = tmp_path / "m.pt2", "torch.export.load"
        torch.export.save(model, str(path))
        output = model.module()(example)
    reference = tmp_path / "m.ref.pt"
    torch.save({"inputs": [example], "outputs": [t.detach() for t in torch.utils._pytree.tree_leaves(output)]},
               reference)
    return {"file": path.name, "sha256": sha256_of(path), "loader": loader, "imports": imports, "device": device,
            "reference": {"file": reference.name}, "tolerance": {"atol": 1e-5, "rtol": 1e-5}}


@pytest.fixture(scope="module")
def modules_folder(tmp_path_factory):
    """One folder for the module: the same PYTHONPATH in each test lets one worker serve them all (until a
    test ends it)."""
    folder = tmp_path_factory.mktemp("modules")
    (folder / "broken_trt.py").write_text("raise KeyError('getpwuid(): uid not found: 43210')\n")
    (folder / "aborts.py").write_text("import os\nos.abort()\n")
    (folder / "hangs.py").write_text("import time\ntime.sleep(60)\n")
    (folder / "kills_worker.py").write_text("import os, signal, time\nos.kill(os.getppid(), signal.SIGKILL)\n"
                                            "time.sleep(60)\n")
    return folder


@pytest.fixture
def modules_dir(modules_folder, monkeypatch):
    """A folder on the worker's PYTHONPATH holding modules whose import fails, crashes or hangs."""
    monkeypatch.setenv("PYTHONPATH", str(modules_folder))  # a changed environment starts a new worker
    return modules_folder


def test_imports_that_fail_with_any_error_are_a_reason(tmp_path, modules_dir):
    result = verify_artifact(saved_entry(tmp_path, "cpu", ["broken_trt"]), tmp_path)
    assert not result["ok"]
    assert result["error"] == ("cannot import broken_trt, which loading this artifact needs "
                               "(KeyError: 'getpwuid(): uid not found: 43210')")


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_cuda_is_checked_before_imports_that_need_it(tmp_path, modules_dir):
    result = verify_artifact(saved_entry(tmp_path, "cuda", ["broken_trt"]), tmp_path)
    assert result == {"ok": False, "error": "this artifact was saved for CUDA and this machine has no CUDA device",
                      "warnings": result["warnings"]}


def test_a_loadable_artifact_still_verifies(tmp_path, modules_dir):
    assert verify_artifact(saved_entry(tmp_path, "cpu", []), tmp_path)["ok"]


def test_a_load_that_crashes_or_hangs_is_a_reason_and_the_next_one_still_runs(tmp_path, modules_dir):
    entry = saved_entry(tmp_path, "cpu", [])
    crashed = verify_artifact({**entry, "imports": ["aborts"]}, tmp_path)
    assert not crashed["ok"] and crashed["error"].startswith("the verify process was killed by SIGABRT")
    hung = verify_artifact({**entry, "imports": ["hangs"]}, tmp_path, timeout_s=1)
    assert hung == {"ok": False, "error": "loading and running it took longer than 1 s"}
    assert verify_artifact(entry, tmp_path)["ok"]


def test_a_worker_that_died_is_started_again(tmp_path, modules_dir):
    entry = saved_entry(tmp_path, "cpu", [])
    died = verify_artifact({**entry, "imports": ["kills_worker"]}, tmp_path)
    assert died["ok"] is False and died["error"].startswith("verify process exited -9")
    assert verify_artifact(entry, tmp_path)["ok"]
    server = FreshProcesses.shared()
    server.proc.kill()
    server.proc.wait()
    assert verify_artifact(entry, tmp_path)["ok"] and FreshProcesses.shared() is not server


@dataclasses.dataclass
class Unknown:
    """An output type registered with pytree here only: the worker never imports this module."""

    logits: torch.Tensor


torch.utils._pytree.register_dataclass(Unknown, serialized_type_name="test_verify_worker.Unknown")


class ReturnsUnknown(torch.nn.Module):
    def forward(self, x):
        return Unknown(x * 2)


def test_a_pt2_whose_output_type_is_unregistered_there_names_the_type(tmp_path, modules_dir):
    """torch.export.load logs the real cause and raises a generic error; the reason carries the cause."""
    program = torch.export.export(ReturnsUnknown(), (torch.randn(2, 3),))
    result = verify_artifact(saved_entry(tmp_path, "cpu", [], model=program), tmp_path)
    assert not result["ok"]
    assert "Deserializing test_verify_worker.Unknown in pytree is not registered" in result["error"], result["error"]
