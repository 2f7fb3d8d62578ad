"""What the run ran on: software versions, CPU, threads, GPU, driver and CUDA."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys

import torch


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


def collect_environment(device: torch.device) -> dict:
    """Everything a reader needs to reproduce or compare a result."""
    import torchvision

    env = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "threads": torch.get_num_threads(),
        "device": str(device),
        "load_average_1m": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None,
        "cudnn_benchmark": torch.backends.cudnn.benchmark,
        "grad_enabled": False,
        "inference_mode": True,
    }
    env.update(gpu_info(device))
    return env


def busy_machine_note(env: dict) -> str | None:
    """A warning when other processes were using the CPUs as the run started (timings may be inflated)."""
    load, cores = env.get("load_average_1m"), env.get("cpu_count") or 1
    if load is None or load < 0.5 * cores:
        return None
    return (f"the machine was busy when the run started (1-minute load average {load} on {cores} CPUs): "
            f"other processes compete for the CPU and can inflate and scatter these timings; "
            f"rerun on an idle machine for numbers to report")
