"""What the run ran on: software versions, CPU, threads, GPU, driver and CUDA."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import time

import torch

BUSY_THRESHOLD = 0.25  # share of CPU time used by others before the run that earns a warning


def cpu_model() -> str:
    """The CPU's marketing name (from /proc/cpuinfo on Linux)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def nvidia_driver_version() -> str | None:
    """The NVIDIA driver version reported by nvidia-smi, if present."""
    if not shutil.which("nvidia-smi"):
        return None
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return out.strip().splitlines()[0] if out.strip() else None


def gpu_info(device: torch.device) -> dict:
    """Name, compute capability and memory of the CUDA device (empty on CPU)."""
    if device.type != "cuda" or not torch.cuda.is_available():
        return {}
    props = torch.cuda.get_device_properties(device)
    return {
        "gpu_name": props.name,
        "compute_capability": f"{props.major}.{props.minor}",
        "gpu_memory_gib": round(props.total_memory / 2**30, 1),
        "driver": nvidia_driver_version(),
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
    }


def collect_environment(device: torch.device, cudnn_benchmark: bool) -> dict:
    """Everything a reader needs to reproduce or compare a result.

    ``cudnn_benchmark`` is the cuDNN autotuning setting the run measures with (the config's
    ``benchmark.cudnn_benchmark``, set around each build group), not torch's flag at the time
    this is called, before the run has set it.
    """
    import torchvision

    env = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "device": str(device),
        "cpu_busy_at_start": cpu_busy_fraction(),
        "cudnn_benchmark": cudnn_benchmark,
        "grad_enabled": False,
        "inference_mode": True,
    }
    env.update(gpu_info(device))
    env["libraries"] = library_versions()
    env["id"] = environment_id(env)
    return env


OPTIONAL_LIBRARIES = ("onnx", "onnxruntime", "onnxruntime-gpu", "openvino", "torch_tensorrt", "tensorrt")
# what makes two machines measure alike; load, time and paths are left out on purpose
FINGERPRINT_KEYS = ("cpu", "cpu_count", "device", "gpu_name", "compute_capability", "driver", "cuda", "cudnn",
                    "python", "torch", "torchvision", "libraries")


def library_versions() -> dict:
    """Installed versions of the optional backends, read from package metadata (nothing is imported)."""
    from importlib import metadata

    versions = {}
    for name in OPTIONAL_LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def environment_id(env: dict) -> str:
    """A stable id of the machine and software a result was measured on (same id, same setup)."""
    stable = {key: env.get(key) for key in FINGERPRINT_KEYS}
    return hashlib.sha256(json.dumps(stable, sort_keys=True, default=str).encode()).hexdigest()[:12]


def environment_name(env: dict) -> str:
    """A short human name: the GPU, else the CPU, with the id that tells identical names apart."""
    return f"{env.get('gpu_name') or env.get('cpu') or 'unknown'} [{env.get('id', environment_id(env))}]"


def _cpu_times() -> tuple[int, int] | None:
    """(busy, total) jiffies summed over all CPUs, from /proc/stat (None where it does not exist)."""
    try:
        with open("/proc/stat", encoding="utf-8") as fh:
            fields = [int(v) for v in fh.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields) - idle, sum(fields)


def cpu_busy_fraction(window_s: float = 0.3) -> float | None:
    """Share of all CPUs' time spent busy over a short window: what other processes use before the run."""
    first = _cpu_times()
    if first is None:
        return None
    time.sleep(window_s)
    second = _cpu_times()
    total = second[1] - first[1]
    return round((second[0] - first[0]) / total, 2) if total > 0 else None


def busy_machine_note(env: dict) -> str | None:
    """A warning when other processes were using the CPUs as the run started (timings may be inflated)."""
    busy = env.get("cpu_busy_at_start")
    if busy is None or busy < BUSY_THRESHOLD:
        return None
    return (f"the machine was busy when the run started ({busy:.0%} of {env.get('cpu_count')} CPUs in use by "
            f"other processes): they compete for the CPU and can inflate and scatter these timings; "
            f"rerun on an idle machine for numbers to report")
