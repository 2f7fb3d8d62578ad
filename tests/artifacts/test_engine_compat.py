"""Engine environment records and the TensorRT-version / GPU-architecture compatibility check."""

from __future__ import annotations

import json

import pytest
import torch

from trtbench.artifacts.engine_compat import _module_version, check_engine_compat, engine_environment

H100 = {"torch": "2.14.0a0", "torch_tensorrt": "2.14.0a0", "tensorrt": "11.3.0.99", "cuda": "13.4",
        "gpu": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0", "driver": "580.95.05"}


def test_environment_records_every_key_as_plain_data():
    env = engine_environment()
    assert set(env) == {"torch", "torch_tensorrt", "tensorrt", "cuda", "gpu", "compute_capability", "driver"}
    assert env["torch"] == torch.__version__
    json.dumps(env)


def test_same_environment_is_compatible():
    assert check_engine_compat(H100, dict(H100)) is None


def test_another_gpu_of_the_same_architecture_and_a_new_driver_are_compatible():
    current = {**H100, "gpu": "NVIDIA H100 PCIe", "driver": "590.10"}
    assert check_engine_compat(H100, current) is None


def test_records_without_tensorrt_are_not_engines():
    assert check_engine_compat({**H100, "tensorrt": None}, {}) is None


def test_tensorrt_version_mismatch():
    message = check_engine_compat(H100, {**H100, "tensorrt": "11.1.0"})
    assert message == ("the engine was built with TensorRT 11.3.0.99 but this environment has TensorRT 11.1.0; "
                       "an engine loads only in the TensorRT version that built it. Rebuild the engine on this "
                       "machine (trtbench run), or pass --force to try anyway.")


def test_gpu_architecture_mismatch():
    message = check_engine_compat(H100, {**H100, "gpu": "NVIDIA L4", "compute_capability": "8.9"})
    assert message.startswith("the engine was built for a NVIDIA H100 80GB HBM3 (compute capability 9.0) but this "
                              "GPU is a NVIDIA L4 (compute capability 8.9); engines are not portable across GPU "
                              "architectures.")


def test_missing_tensorrt_and_gpu_are_both_reported():
    current = {**H100, "tensorrt": None, "gpu": None, "compute_capability": None}
    message = check_engine_compat(H100, current)
    assert "TensorRT is not installed here" in message and "no CUDA GPU is visible here" in message
    assert message.endswith("pass --force to try anyway.")


def broken_module(tmp_path, monkeypatch, name: str, error: str):
    """A module whose import raises ``error`` (as torch_tensorrt does without a passwd entry or CUDA)."""
    (tmp_path / f"{name}.py").write_text(f"raise {error}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


@pytest.mark.parametrize("error, shown", [
    ("KeyError('getpwuid(): uid not found: 43210')", "KeyError: 'getpwuid(): uid not found: 43210'"),
    ("RuntimeError('Found no NVIDIA driver on your system')", "RuntimeError: Found no NVIDIA driver on your system"),
    ("Exception('import error when try to import _TensorRTProxyModule')", "Exception: import error"),
])
def test_a_module_that_fails_to_import_is_reported_not_raised(tmp_path, monkeypatch, error, shown):
    name = broken_module(tmp_path, monkeypatch, "trtbench_broken_import", error)
    assert _module_version(name).startswith(f"unknown (import failed: {shown}")


def test_a_missing_module_has_no_version():
    assert _module_version("trtbench_no_such_module") is None
