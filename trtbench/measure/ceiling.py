"""How fast the device could go: its theoretical peak FLOP/s and a measured dense-matmul ceiling.

Two ceilings, as each answers a different question:

* :func:`theoretical_peak`: cores x clock x FLOP per cycle of the vector (CPU) or tensor
  (GPU) units, from the hardware's description. No program reaches it; it says how much of
  the silicon a run uses.
* :func:`measured_matmul_ceiling`: the best FLOP/s PyTorch's own dense matmul reaches here,
  at the run's dtype and threads: the best over several sizes and repeats, because one
  timing of one size on a shared machine can read half of the true figure.

Every result is a dict that states its method and assumptions next to the number
(``flops_per_s``, None when it cannot be known, with ``reason``).
"""

from __future__ import annotations

import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import torch

from trtbench.core.precision import dtype_name, precision_dtype

# fp32 FLOP per cycle per core, by the widest vector unit in the CPU flags (x86 "flags", Arm "Features").
CPU_VECTOR_UNITS = [
    ({"avx512f"}, "AVX-512", 64, "2 FMA units x 16 fp32 lanes x 2 FLOP per FMA"),
    ({"avx2", "fma"}, "AVX2+FMA", 32, "2 FMA units x 8 fp32 lanes x 2 FLOP per FMA"),
    ({"avx"}, "AVX", 16, "1 add + 1 multiply unit x 8 fp32 lanes"),
    ({"sse2"}, "SSE2", 8, "1 add + 1 multiply unit x 4 fp32 lanes"),
    ({"asimd"}, "Arm NEON", 16, "2 FMA units x 4 fp32 lanes x 2 FLOP per FMA"),
]
CPU_ASSUMPTIONS = [
    "every thread runs on its own physical core (threads beyond the physical cores add nothing)",
    "the clock is the one named in clock_source; all-core turbo under AVX-512 load may differ",
]
FLAGS_ASSUMPTION = (
    "FLOP per cycle from the widest vector unit in the CPU flags, with 2 full-width FMA units per core; the "
    "flags overstate AMD Zen/Zen+ (AVX2 run as 2x128-bit), AMD Zen 4 (AVX-512 run as 2x256-bit) and Xeons with "
    "one AVX-512 FMA port (Bronze, Silver, Gold 51xx but 5122), which are recognised from /proc/cpuinfo and "
    "corrected; other CPUs with fewer or narrower FMA units than this (none known to this table) peak lower")

# Microarchitectures whose flags overstate their vector units, recognised from /proc/cpuinfo's vendor_id,
# cpu family, model and model name: (name, applies to, fp32 FLOP per cycle per core, how, source).
CPU_CORRECTIONS = [
    ("AMD Zen/Zen+ (family 17h, models 00h-2Fh)",
     lambda c: c["vendor"] == "AuthenticAMD" and c["family"] == 0x17 and c["model"] is not None and c["model"] < 0x30,
     16, "2 FMA units x 4 fp32 lanes (128-bit datapaths) x 2 FLOP per FMA: a 256-bit AVX2 op runs as two 128-bit "
         "halves",
     "AMD Software Optimization Guide for AMD Family 17h Processors (pub. 55723), floating-point unit: four "
     "128-bit pipes, 256-bit AVX ops split into two 128-bit ops; family 17h models 30h and later are Zen 2, "
     "with 256-bit datapaths"),
    ("Hygon Dhyana (family 18h, the Zen core)",
     lambda c: c["vendor"] == "HygonGenuine" and c["family"] == 0x18,
     16, "2 FMA units x 4 fp32 lanes (128-bit datapaths) x 2 FLOP per FMA: a 256-bit AVX2 op runs as two 128-bit "
         "halves",
     "Hygon family 18h is built on AMD's Zen core (as Linux arch/x86/kernel/cpu/hygon.c handles it); see the "
     "AMD Family 17h Software Optimization Guide (pub. 55723)"),
    ("AMD Zen 4 (family 19h with AVX-512)",
     lambda c: c["vendor"] == "AuthenticAMD" and c["family"] == 0x19 and "avx512f" in c["flags"],
     32, "2 FMA units x 8 fp32 lanes (256-bit datapaths) x 2 FLOP per FMA: a 512-bit op runs as two 256-bit halves",
     "Software Optimization Guide for the AMD Zen4 Microarchitecture (pub. 57647), floating-point unit: "
     "512-bit instructions are executed over the 256-bit datapaths in two passes; Zen 3 (family 19h without "
     "AVX-512) has the full 256-bit AVX2 rate"),
    ("Intel Xeon Scalable with one AVX-512 FMA unit (Bronze 31xx/32xx, Silver 41xx/42xx, Gold 51xx but 5122)",
     lambda c: c["vendor"] == "GenuineIntel" and "avx512f" in c["flags"] and re.search(
         r"\bXeon\(R\) (?:Bronze 3[12]\d\d|Silver 4[12]\d\d|Gold 51(?!22)\d\d)", c["model_name"]) is not None,
     32, "1 FMA unit x 16 fp32 lanes x 2 FLOP per FMA",
     "Intel ARK '# of AVX-512 FMA Units' = 1 for 1st/2nd generation Xeon Scalable Bronze and Silver and for 1st "
     "generation Gold 5100 (except Gold 5122, which has 2); Gold 52xx and later generations are taken as 2"),
]

# NVIDIA datasheet peaks in TFLOP/s, dense (without 2:4 sparsity), at boost clock. Most specific name first.
GPU_PEAKS = [
    (r"\bH200\b.*\bNVL\b", "H200 NVL", {"fp32": 60.0, "tf32": 417.5, "fp16": 835.5}),
    (r"\bH200\b", "H200 SXM", {"fp32": 67.0, "tf32": 494.7, "fp16": 989.4}),
    (r"\bH100\b.*\bNVL\b", "H100 NVL", {"fp32": 60.0, "tf32": 417.5, "fp16": 835.5}),
    (r"\bH100\b.*\bPCIE\b", "H100 PCIe", {"fp32": 51.2, "tf32": 378.0, "fp16": 756.0}),
    (r"\bH100\b", "H100 SXM", {"fp32": 67.0, "tf32": 494.7, "fp16": 989.4}),
    (r"\bA100\b", "A100", {"fp32": 19.5, "tf32": 156.0, "fp16": 312.0}),
    (r"\bL40S\b", "L40S", {"fp32": 91.6, "tf32": 183.0, "fp16": 362.0}),
    (r"\bL4\b", "L4", {"fp32": 30.3, "tf32": 60.0, "fp16": 121.0}),
    (r"\bA10\b", "A10", {"fp32": 31.2, "tf32": 62.5, "fp16": 125.0}),
    (r"\bT4\b", "T4", {"fp32": 8.1, "tf32": None, "fp16": 65.0}),
    (r"\bV100\b", "V100 SXM2", {"fp32": 15.7, "tf32": None, "fp16": 125.0}),
]

DEFAULT_SIZES = {"cpu": (1024, 2048, 4096), "cuda": (2048, 4096, 8192)}
GROWTH_WORTH = 1.05  # a larger matmul size is tried only while the last one gained at least this factor


def parse_cpuinfo(text: str) -> dict:
    """Flags, vendor, family, model, model name, clock and physical core count from ``/proc/cpuinfo`` text."""
    processors = [dict(re.findall(r"^([^:\n]+?)\s*:\s*(.*)$", block, re.M)) for block in text.split("\n\n")]
    processors = [p for p in processors if "processor" in p]
    first = processors[0] if processors else {}
    cores = {(p.get("physical id"), p.get("core id")) for p in processors if "core id" in p}
    return {"flags": set((first.get("flags") or first.get("Features") or "").split()),
            "vendor": first.get("vendor_id", ""), "family": _int(first.get("cpu family")),
            "model": _int(first.get("model")), "model_name": first.get("model name", ""), "cpu_mhz": float(first["cpu MHz"]) if "cpu MHz" in first else None,
            "physical_cores": len(cores) or len(processors)}


def cpu_clock(cpuinfo: dict, lscpu_text: str, max_freq_khz: str) -> tuple[float | None, str]:
    """The CPU clock in GHz and where it came from: lscpu's max MHz, the kernel's max frequency,
    the GHz in the model name (the base clock), or /proc/cpuinfo's 'cpu MHz' (current or nominal)."""
    match = re.search(r"^CPU max MHz:\s*([\d.]+)", lscpu_text, re.M)
    if match and float(match.group(1)) > 0:
        return float(match.group(1)) / 1e3, "lscpu 'CPU max MHz'"
    if max_freq_khz.strip():
        return int(max_freq_khz) / 1e6, "cpufreq cpuinfo_max_freq"
    match = re.search(r"@\s*([\d.]+)\s*GHz", cpuinfo["model_name"])
    if match:
        return float(match.group(1)), "model name (base clock)"
    if cpuinfo["cpu_mhz"]:
        return cpuinfo["cpu_mhz"] / 1e3, "/proc/cpuinfo 'cpu MHz' (the current or, in a VM, nominal clock)"
    return None, "no clock found in lscpu, cpufreq or /proc/cpuinfo"


def cpu_peak(threads: int, cpuinfo_text: str, lscpu_text: str = "", max_freq_khz: str = "") -> dict:
    """fp32 peak of ``threads`` cores: cores x clock x FLOP per cycle of the widest vector unit, corrected for
    the microarchitectures whose flags overstate it (:data:`CPU_CORRECTIONS`)."""
    cpuinfo = parse_cpuinfo(cpuinfo_text)
    clock_ghz, clock_source = cpu_clock(cpuinfo, lscpu_text, max_freq_khz)
    unit = next((u for u in CPU_VECTOR_UNITS if u[0] <= cpuinfo["flags"]), None)
    cores = min(threads, cpuinfo["physical_cores"])
    result = {"method": "cores x clock x fp32 FLOP per cycle per core", "cores": cores, "threads": threads,
              "clock_ghz": clock_ghz, "clock_source": clock_source, "assumptions": [*CPU_ASSUMPTIONS, FLAGS_ASSUMPTION]}
    if unit is None or clock_ghz is None:
        why = "no known vector unit in the CPU flags" if unit is None else clock_source
        return {**result, "flops_per_s": None, "reason": why}
    _, name, per_cycle, how = unit
    correction = next((c for c in CPU_CORRECTIONS if c[1](cpuinfo)), None)
    if correction is not None:
        microarchitecture, _, per_cycle, how, source = correction
        result.update(microarchitecture=microarchitecture, assumptions=[
            *CPU_ASSUMPTIONS, f"{per_cycle} fp32 FLOP per cycle per core for {microarchitecture} ({how}), not the "
                              f"{unit[2]} its {name} flags suggest; source: {source}"])
    return {**result, "flops_per_s": cores * clock_ghz * 1e9 * per_cycle, "vector_unit": name,
            "flop_per_cycle": per_cycle, "flop_per_cycle_from": how}


def gpu_peak(gpu_name: str, dtype: torch.dtype, tf32: bool) -> dict:
    """Datasheet peak of a known NVIDIA GPU at ``dtype`` (fp32 uses the TF32 tensor-core peak when ``tf32``)."""
    result = {"method": "NVIDIA datasheet peak, dense (no 2:4 sparsity), boost clock", "gpu": gpu_name}
    entry = next(((label, peaks) for pattern, label, peaks in GPU_PEAKS if re.search(pattern, gpu_name.upper())), None)
    if entry is None:
        return {**result, "flops_per_s": None,
                "reason": f"'{gpu_name}' is not in the table ({', '.join(label for _, label, _ in GPU_PEAKS)})"}
    label, peaks = entry
    if dtype in (torch.float16, torch.bfloat16):
        unit, tflops = "fp16/bf16 tensor cores", peaks["fp16"]
    elif dtype == torch.float32 and tf32 and peaks["tf32"]:
        unit, tflops = "TF32 tensor cores (TF32 is allowed for fp32 convolutions or matmuls)", peaks["tf32"]
    elif dtype == torch.float32:
        unit, tflops = "fp32 CUDA cores", peaks["fp32"]
    else:
        return {**result, "table_entry": label, "flops_per_s": None, "reason": f"no peak listed for {dtype}"}
    return {**result, "table_entry": label, "unit": unit, "flops_per_s": tflops * 1e12}


def theoretical_peak(device: torch.device, dtype: torch.dtype, threads: int | None = None) -> dict:
    """The hardware's peak FLOP/s at ``dtype``: CPU vector units for ``threads`` cores, or a GPU datasheet."""
    device = torch.device(device)
    if device.type == "cuda":
        tf32 = torch.backends.cudnn.allow_tf32 or torch.backends.cuda.matmul.allow_tf32
        return gpu_peak(torch.cuda.get_device_name(device), dtype, tf32)
    if dtype != torch.float32:
        return {"method": "cores x clock x fp32 FLOP per cycle per core", "flops_per_s": None,
                "reason": f"CPU peaks are computed for float32 only, not {dtype}"}
    return cpu_peak(threads or torch.get_num_threads(), _read("/proc/cpuinfo"), _lscpu(),
                    _read("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq"))


def measured_matmul_ceiling(device: torch.device, dtype: torch.dtype = torch.float32, sizes=None,
                            repeats: int = 5, threads: int | None = None) -> dict:
    """Best FLOP/s of ``torch.mm`` on n x n matrices, over ``sizes`` and ``repeats`` timed calls of each.

    Each size gets one untimed warm-up call; each timed call is synchronized (CUDA events on
    a GPU). ``threads`` sets torch's CPU threads for the measurement only.
    """
    device = torch.device(device)
    sizes = tuple(sizes or DEFAULT_SIZES["cuda" if device.type == "cuda" else "cpu"])
    previous_threads = torch.get_num_threads()
    if threads:
        torch.set_num_threads(threads)
    try:
        samples: dict[int, list[float]] = {}
        for n in sizes:  # larger matrices until one gains under 5% over the best so far (each costs 8x more)
            best_so_far = max((max(v) for v in samples.values()), default=0.0)
            samples[n] = [2 * n ** 3 / seconds for seconds in _time_matmuls(n, device, dtype, repeats)]
            if best_so_far and max(samples[n]) < best_so_far * GROWTH_WORTH:
                break
        used_threads = torch.get_num_threads()
    finally:
        torch.set_num_threads(previous_threads)
    best_size = max(samples, key=lambda n: max(samples[n]))
    return {"flops_per_s": max(samples[best_size]), "size": best_size,
            "samples_flops_per_s": {str(n): values for n, values in samples.items()},
            "method": f"best of {repeats} timed torch.mm calls at each n in {list(samples)} "
                      f"(n x n times n x n, 2n^3 FLOP; of {list(sizes)}, stopping at the first size that gained "
                      f"under {GROWTH_WORTH - 1:.0%}), one warm-up call per size",
            "dtype": str(dtype), "device": str(device), "threads": used_threads}


def _time_matmuls(n: int, device: torch.device, dtype: torch.dtype, repeats: int) -> list[float]:
    """Seconds of ``repeats`` synchronized ``torch.mm`` calls on n x n matrices."""
    a, b = (torch.randn(n, n, device=device, dtype=dtype) for _ in range(2))
    out = torch.empty(n, n, device=device, dtype=dtype)
    torch.mm(a, b, out=out)
    seconds = []
    for _ in range(repeats):
        if device.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize(device)
            start.record()
            torch.mm(a, b, out=out)
            end.record()
            end.synchronize()
            seconds.append(start.elapsed_time(end) / 1e3)
        else:
            t0 = time.perf_counter()
            torch.mm(a, b, out=out)
            seconds.append(time.perf_counter() - t0)
    return seconds


def _int(text: str | None) -> int | None:
    """A /proc/cpuinfo number (decimal), None when absent or not a number."""
    return int(text) if text is not None and text.strip().isdigit() else None


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def _lscpu() -> str:
    try:
        return subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


def device_ceilings(device: torch.device, dtype: torch.dtype, threads: int, measure: bool) -> dict:
    """The device's FLOP/s ceilings at ``dtype`` and ``threads``: the hardware peak, and the measured
    matmul ceiling when ``measure`` (``benchmark.measure_ceiling``)."""
    peak = theoretical_peak(device, dtype, threads)
    ceiling = {"peak_flops_per_s": peak.get("flops_per_s"), "peak_method": peak.get("method"),
               "peak_assumptions": peak.get("assumptions") or peak.get("reason")}
    if measure:
        measured = measured_matmul_ceiling(device, dtype, threads=threads)
        ceiling.update(measured_flops_per_s=measured["flops_per_s"], measured_method=measured["method"])
    return ceiling


@dataclass(frozen=True)
class Ceiling:
    """A device's FLOP/s ceilings (:func:`device_ceilings`) in one environment at one compute dtype and
    thread count: stored once in the results, shared by every record measured there
    (:meth:`trtbench.results.resultset.ResultSet.ceiling_of`)."""

    environment: str
    device: str
    dtype: str  # float32, float16, bfloat16: the compute dtype of its records' precisions
    threads: int
    values: dict  # device_ceilings(): peak_flops_per_s, peak_method, ..., measured_flops_per_s where measured

    @property
    def scope(self) -> tuple:
        """Identifies where these ceilings hold: (environment, device, compute dtype, threads); one per scope."""
        return (self.environment, self.device, self.dtype, self.threads)

    @staticmethod
    def scope_of(record) -> tuple:
        """The scope of the ceilings that apply to ``record`` (:class:`~trtbench.core.record.Record`)."""
        case = record.case
        return (record.environment, case.device, dtype_name(precision_dtype(case.precision)), case.threads)

    def share(self, achieved_flops_per_s: Optional[float], which: str) -> Optional[float]:
        """``achieved_flops_per_s`` as a share of the ``peak`` or ``measured`` ceiling (None when unknown)."""
        ceiling = self.values.get(f"{which}_flops_per_s")
        return achieved_flops_per_s / ceiling if achieved_flops_per_s and ceiling else None

    def to_dict(self) -> dict:
        return {"environment": self.environment, "device": self.device, "dtype": self.dtype, "threads": self.threads,
                "values": self.values}

    @classmethod
    def from_dict(cls, data: dict) -> "Ceiling":
        return cls(environment=data["environment"], device=data["device"], dtype=data["dtype"],
                   threads=int(data["threads"]), values=dict(data["values"]))
