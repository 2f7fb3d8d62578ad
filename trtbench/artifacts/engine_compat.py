"""What a TensorRT artifact depends on, and whether this machine can load it (docs/tensorrt.md)."""

from __future__ import annotations

import importlib

import torch

from trtbench.core.env import nvidia_driver_version


def _module_version(name: str) -> str | None:
    """``name.__version__``; None when it is not installed; what went wrong where importing it fails otherwise."""
    try:
        module = importlib.import_module(name)
    except (ImportError, OSError):
        return None
    except Exception as err:
        return f"unknown (import failed: {type(err).__name__}: {err})"
    return str(getattr(module, "__version__", None) or "unknown")


def engine_environment(device: torch.device | str | None = None) -> dict:
    """Versions and GPU identity a TensorRT engine is bound to, each None where the component is absent."""
    env = {"torch": torch.__version__, "torch_tensorrt": _module_version("torch_tensorrt"),
           "tensorrt": _module_version("tensorrt"), "cuda": torch.version.cuda,
           "gpu": None, "compute_capability": None, "driver": None}
    if torch.cuda.is_available():
        index = torch.device(device).index if device is not None else None
        index = torch.cuda.current_device() if index is None else index
        major, minor = torch.cuda.get_device_capability(index)
        env.update(gpu=torch.cuda.get_device_name(index), compute_capability=f"{major}.{minor}",
                   driver=nvidia_driver_version())
    return env


def check_engine_compat(recorded: dict, current: dict) -> str | None:
    """Why an engine built in ``recorded`` cannot be trusted to load in ``current``; None when it can."""
    built_trt = recorded.get("tensorrt")
    if not built_trt:
        return None
    problems = []
    here_trt = current.get("tensorrt")
    if here_trt is None:
        problems.append(f"the engine was built with TensorRT {built_trt} but TensorRT is not installed here")
    elif here_trt != built_trt:
        problems.append(f"the engine was built with TensorRT {built_trt} but this environment has TensorRT "
                        f"{here_trt}; an engine loads only in the TensorRT version that built it")
    built_cc = recorded.get("compute_capability")
    here_cc = current.get("compute_capability")
    if built_cc and here_cc is None:
        problems.append(f"the engine was built for a {recorded.get('gpu')} (compute capability {built_cc}) "
                        f"but no CUDA GPU is visible here")
    elif built_cc and here_cc != built_cc:
        problems.append(f"the engine was built for a {recorded.get('gpu')} (compute capability {built_cc}) but this "
                        f"GPU is a {current.get('gpu')} (compute capability {here_cc}); engines are not portable "
                        f"across GPU architectures")
    if not problems:
        return None
    return "; ".join(problems) + ". Rebuild the engine on this machine (trtbench run), or pass --force to try anyway."
