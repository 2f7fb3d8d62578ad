"""How fast the device's memory could be read: a STREAM triad and the datasheet (docs/generate.md)."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import torch

from trtbench.core.procfs import available_bytes
from trtbench.measure.ceiling import DeviceCeiling
from trtbench.measure.datasheets import memory_bandwidths, not_in_table, row_covering
from trtbench.measure.timing import synchronize

CACHE_MULTIPLE = 4  # STREAM's rule: each array at least 4x the last-level caches together
ASSUMED_CACHE_BYTES = 64 << 20  # when sysfs names no cache
MEMORY_SHARE = 0.5  # the three arrays take at most this share of the free memory
ELEMENT_BYTES = 8  # float64, as STREAM
TRIAD_SCALAR = 3.0

def datasheet_bandwidth(device: str, gpu_name: str = "") -> dict:
    """The datasheet memory bandwidth of ``device`` (a GPU named ``gpu_name``), with ``reason`` where unknown."""
    if not device.startswith("cuda"):
        return {"bytes_per_s": None, "reason": "unknown for a CPU: it depends on the memory fitted and the channels "
                                                "populated, which trtbench does not read"}
    row = row_covering(memory_bandwidths(), gpu_name)
    if row is None:
        return {"bytes_per_s": None, "reason": not_in_table(memory_bandwidths(), gpu_name)}
    return {"bytes_per_s": row.tb_per_s * 1e12, "table_entry": row.label, "method": "NVIDIA datasheet memory bandwidth"}


def cpu_last_level_cache(root: Path = Path("/sys/devices/system/cpu")) -> tuple[int, str]:
    """Bytes of the CPU's last-level caches together (each instance by its ``shared_cpu_list``), and whence."""
    found: dict[tuple[int, str], int] = {}
    for index in root.glob("cpu[0-9]*/cache/index[0-9]*"):
        try:
            level = int((index / "level").read_text())
            size = re.fullmatch(r"\s*(\d+)\s*([KMG]?)\s*", (index / "size").read_text())
            shared = (index / "shared_cpu_list").read_text().strip()
            kind = (index / "type").read_text().strip()
        except (OSError, ValueError):
            continue
        if kind != "Instruction" and size is not None:
            found[(level, shared)] = int(size.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[size.group(2)]
    if not found:
        return ASSUMED_CACHE_BYTES, f"assumed {ASSUMED_CACHE_BYTES >> 20} MiB: sysfs lists no cache"
    top = max(level for level, _ in found)
    instances = [size for (level, _), size in found.items() if level == top]
    return sum(instances), f"sysfs: {len(instances)} L{top} cache(s) of {instances[0] >> 20} MiB"


def triad_array_bytes(device: torch.device) -> tuple[int, str]:
    """Bytes of each triad array on ``device`` (a multiple of its last-level cache, capped by free memory), and how."""
    if device.type == "cuda":
        cache, free = torch.cuda.get_device_properties(device).L2_cache_size, torch.cuda.mem_get_info(device)[0]
        source = f"the device's {cache >> 20} MiB L2"
    else:
        (cache, source), available = cpu_last_level_cache(), available_bytes()
        free = 1 << 32 if available is None else available  # unknown: 4 GiB
    wanted, cap = CACHE_MULTIPLE * cache, int(free * MEMORY_SHARE / 3)
    if wanted <= cap:
        return wanted, f"{CACHE_MULTIPLE}x the last-level cache ({source})"
    return cap, f"capped by free memory ({MEMORY_SHARE:.0%} over 3 arrays), below {CACHE_MULTIPLE}x ({source})"


def measured_triad(device: torch.device, threads: Optional[int] = None, array_bytes: Optional[int] = None,
                   repeats: int = 5) -> dict:
    """The best bytes/s of STREAM's triad on ``device`` (``threads`` for the measurement only)."""
    device = torch.device(device)
    sized = (array_bytes, "given") if array_bytes else triad_array_bytes(device)
    n = max(1, sized[0] // ELEMENT_BYTES)
    previous_threads = torch.get_num_threads()
    if threads:
        torch.set_num_threads(threads)
    try:
        a, b, c = (torch.full((n,), value, dtype=torch.float64, device=device) for value in (0.0, 1.0, 2.0))
        seconds = [_time_triad(a, b, c) for _ in range(repeats + 1)][1:]
        used_threads = torch.get_num_threads()
    finally:
        torch.set_num_threads(previous_threads)
    moved = 3 * ELEMENT_BYTES * n
    return {"bytes_per_s": moved / min(seconds), "array_bytes": n * ELEMENT_BYTES, "sized_by": sized[1],
            "samples_bytes_per_s": [moved / s for s in seconds], "threads": used_threads, "device": str(device),
            "method": f"STREAM triad a = b + {TRIAD_SCALAR:g} * c (torch.add(b, c, alpha, out=a)) on float64 arrays "
                      f"of {n * ELEMENT_BYTES / 2**20:.0f} MiB, best of {repeats} timed calls after one untimed; "
                      f"3 x 8 bytes per element (write-allocate not counted)"}


def _time_triad(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> float:
    synchronize(a.device)
    start = time.perf_counter()
    torch.add(b, c, alpha=TRIAD_SCALAR, out=a)
    synchronize(a.device)
    return time.perf_counter() - start


def memory_ceilings(device: torch.device, threads: int, measure: bool) -> dict:
    """The datasheet bandwidth of ``device`` and, when ``measure``, its measured triad."""
    device = torch.device(device)
    gpu_name = torch.cuda.get_device_name(device) if device.type == "cuda" else ""
    sheet = datasheet_bandwidth(str(device), gpu_name)
    values = {"datasheet_bytes_per_s": sheet["bytes_per_s"],
              "datasheet_source": sheet.get("table_entry") or sheet["reason"]}
    if measure:
        triad = measured_triad(device, threads)
        values.update(measured_bytes_per_s=triad["bytes_per_s"], measured_method=triad["method"],
                      measured_sized_by=triad["sized_by"])
    return values


@dataclass(frozen=True)
class MemoryCeiling(DeviceCeiling, kind="memory_ceiling", results_key="memory_ceilings", unit="bytes_per_s"):
    """A device's memory-bandwidth ceilings (:func:`memory_ceilings`) in one environment at one thread count."""

    threads: int
    values: dict  # memory_ceilings(): datasheet_bytes_per_s, datasheet_source, measured_bytes_per_s where measured
