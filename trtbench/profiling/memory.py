"""Memory: parameter and buffer sizes, peak memory of one forward pass, artifact sizes (docs/profiling.md)."""

from __future__ import annotations

import ctypes
import ctypes.util
import resource
import sys
from pathlib import Path
from typing import Callable

import torch

from trtbench.core.procfs import proc_kib
from trtbench.profiling import NotSupported
from trtbench.core.status import Status

CUDA_METHOD = ("torch.cuda.max_memory_allocated after reset_peak_memory_stats (PyTorch's caching allocator; "
               "memory allocated outside it, e.g. by TensorRT engines or cuDNN/cuBLAS handles, is not counted)")
HWM_METHOD = ("process RSS high-water mark (VmHWM) minus RSS before the pass; VmHWM reset via /proc/self/clear_refs "
              "after malloc_trim, so it includes every page the pass touched, activations and workspaces")
MAXRSS_METHOD = ("increase of getrusage ru_maxrss (lifetime RSS high-water mark) over the pass: a lower bound, "
                 "0 when the pass stayed below the process's earlier peak")


def parameter_summary(module: object) -> dict:
    """Counts and bytes of the module's parameters and buffers (zero for modules that hide them, e.g. engines)."""
    if not isinstance(module, torch.nn.Module):
        raise NotSupported(f"the built variant is a {type(module).__name__}, not an nn.Module")
    params = list(module.parameters())
    buffers = list(module.buffers())
    return {
        "parameters": sum(p.numel() for p in params),
        "trainable_parameters": sum(p.numel() for p in params if p.requires_grad),
        "parameter_bytes": sum(p.numel() * p.element_size() for p in params),
        "buffers": sum(b.numel() for b in buffers),
        "buffer_bytes": sum(b.numel() * b.element_size() for b in buffers),
    }


def proc_status_bytes(key: str) -> int:
    """A ``/proc/self/status`` memory field of this process in bytes (``VmRSS``, ``VmHWM``); KeyError: unread."""
    kib = proc_kib("/proc/self/status", key)
    if kib is None:
        raise KeyError(key)
    return kib * 1024


def _malloc_trim() -> None:
    name = ctypes.util.find_library("c")
    libc = ctypes.CDLL(name) if name else None
    if libc is not None and hasattr(libc, "malloc_trim"):
        libc.malloc_trim(0)


def _reset_rss_high_water_mark() -> bool:
    """Reset VmHWM to the current RSS (Linux); False where that is not permitted."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as fh:
            fh.write("5")
        proc_status_bytes("VmHWM")
    except (OSError, KeyError):
        return False
    return True


def _maxrss_bytes() -> int:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss if sys.platform == "darwin" else rss * 1024  # bytes on macOS, KiB elsewhere


def track_peak(fn: Callable[[], object], device: torch.device) -> tuple[object, dict]:
    """Call ``fn`` once; its result and the memory high-water mark during the call (host RSS; CUDA: allocated)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        baseline = torch.cuda.memory_allocated(device)
        result = fn()
        torch.cuda.synchronize(device)
        peak, method = torch.cuda.max_memory_allocated(device), CUDA_METHOD
    else:
        _malloc_trim()
        hwm = _reset_rss_high_water_mark()
        baseline = proc_status_bytes("VmRSS") if hwm else _maxrss_bytes()
        result = fn()
        peak, method = (proc_status_bytes("VmHWM"), HWM_METHOD) if hwm else (_maxrss_bytes(), MAXRSS_METHOD)
    return result, {"status": Status.OK, "method": method, "baseline_bytes": baseline, "peak_bytes": peak,
                    "step_bytes": max(0, peak - baseline)}


def peak_memory(fn: Callable[[], object], device: torch.device) -> dict:
    """Peak memory of one call of ``fn`` after one warm-up call (see :func:`track_peak`)."""
    with torch.no_grad():
        fn()
        return track_peak(fn, device)[1]


def artifact_sizes(paths: list[Path], root: Path | None = None) -> list[dict]:
    """Size on disk of each saved artifact; paths under ``root`` are reported relative to it."""
    return [{"path": str(path.relative_to(root) if root is not None and path.is_relative_to(root) else path),
             "bytes": path.stat().st_size} for path in map(Path, paths)]
