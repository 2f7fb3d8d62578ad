"""How fast the device could go: its peak FLOP/s and a measured dense-matmul ceiling (docs/measuring.md)."""

from __future__ import annotations

import re
import subprocess
import time
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Callable, ClassVar, Optional

import torch

from trtbench.core.codec import Coded
from trtbench.core.part import register_part
from trtbench.core.precision import compute_dtype, dtype_name
from trtbench.measure.datasheets import cpu_reduced_units, cpu_vector_units, gpu_peaks, not_in_table, row_covering

CPU_ASSUMPTIONS = [
    "every thread runs on its own physical core (threads beyond the physical cores add nothing)",
    "the clock is the one named in clock_source; all-core turbo under AVX-512 load may differ",
]
FLAGS_ASSUMPTION = (
    "FLOP per cycle from the widest vector unit in the CPU flags, with 2 full-width FMA units per core; the "
    "flags overstate AMD Zen/Zen+ (AVX2 run as 2x128-bit), AMD Zen 4 (AVX-512 run as 2x256-bit) and Xeons with "
    "one AVX-512 FMA port (Bronze, Silver, Gold 51xx but 5122), which are recognised from /proc/cpuinfo and "
    "corrected; other CPUs with fewer or narrower FMA units than this (none known to this table) peak lower")


@dataclass(frozen=True)
class Correction:
    """A microarchitecture whose flags overstate its vector units (``applies`` to :func:`parse_cpuinfo`'s dict): its
    fp32 FLOP per cycle per core, how, and the source."""

    microarchitecture: str
    applies: Callable[[dict], bool]
    flop_per_cycle: int
    how: str
    source: str


@dataclass(frozen=True)
class AddLatency:
    """A microarchitecture's latency in cycles of a scalar fp64 add (``applies`` as :class:`Correction`'s)."""

    microarchitecture: str
    applies: Callable[[dict], bool]
    cycles: int
    source: str


CPU_CORRECTIONS = [
    Correction(
        "AMD Zen/Zen+ (family 17h, models 00h-2Fh)",
        lambda c: c["vendor"] == "AuthenticAMD" and c["family"] == 0x17 and c["model"] is not None
        and c["model"] < 0x30,
        16, "2 FMA units x 4 fp32 lanes (128-bit datapaths) x 2 FLOP per FMA: a 256-bit AVX2 op runs as two 128-bit "
            "halves",
        "AMD Software Optimization Guide for AMD Family 17h Processors (pub. 55723), floating-point unit: four "
        "128-bit pipes, 256-bit AVX ops split into two 128-bit ops; family 17h models 30h and later are Zen 2, "
        "with 256-bit datapaths"),
    Correction(
        "Hygon Dhyana (family 18h, the Zen core)",
        lambda c: c["vendor"] == "HygonGenuine" and c["family"] == 0x18,
        16, "2 FMA units x 4 fp32 lanes (128-bit datapaths) x 2 FLOP per FMA: a 256-bit AVX2 op runs as two 128-bit "
            "halves",
        "Hygon family 18h is built on AMD's Zen core (as Linux arch/x86/kernel/cpu/hygon.c handles it); see the "
        "AMD Family 17h Software Optimization Guide (pub. 55723)"),
    Correction(
        "AMD Zen 4 (family 19h with AVX-512)",
        lambda c: c["vendor"] == "AuthenticAMD" and c["family"] == 0x19 and "avx512f" in c["flags"],
        32, "2 FMA units x 8 fp32 lanes (256-bit datapaths) x 2 FLOP per FMA: a 512-bit op runs as two 256-bit halves",
        "Software Optimization Guide for the AMD Zen4 Microarchitecture (pub. 57647), floating-point unit: "
        "512-bit instructions are executed over the 256-bit datapaths in two passes; Zen 3 (family 19h without "
        "AVX-512) has the full 256-bit AVX2 rate"),
    Correction(
        "Intel Xeon Scalable with one AVX-512 FMA unit (Bronze 31xx/32xx, Silver 41xx/42xx, Gold 51xx but 5122)",
        lambda c: c["vendor"] == "GenuineIntel" and "avx512f" in c["flags"] and re.search(
            r"\bXeon\(R\) (?:Bronze 3[12]\d\d|Silver 4[12]\d\d|Gold 51(?!22)\d\d)", c["model_name"]) is not None,
        32, "1 FMA unit x 16 fp32 lanes x 2 FLOP per FMA",
        "Intel ARK '# of AVX-512 FMA Units' = 1 for 1st/2nd generation Xeon Scalable Bronze and Silver and for 1st "
        "generation Gold 5100 (except Gold 5122, which has 2); Gold 52xx and later generations are taken as 2"),
]

# Latency in cycles of a scalar fp64 add, by microarchitecture, for measure_cpu_clock (none: the clock is not measured)
_HASWELL_BROADWELL = {0x3C, 0x3F, 0x45, 0x46, 0x3D, 0x47, 0x4F, 0x56}
_SKYLAKE_TO_ICE_LAKE = {0x4E, 0x5E, 0x55, 0x8E, 0x9E, 0xA5, 0xA6, 0x66, 0x7D, 0x7E, 0x6A, 0x6C, 0x8C, 0x8D, 0xA7}
GOLDEN_COVE_FLAGS = {"amx_tile", "amx_bf16", "amx_int8", "avx512_fp16"}  # only Golden Cove and later cores have these
FP64_ADD_LATENCY = [
    AddLatency(
        "AMD Zen 5 (family 1Ah)", lambda c: c["vendor"] == "AuthenticAMD" and c["family"] == 0x1A, 2,
        "AMD's Software Optimization Guide for the Zen 5 microarchitecture: FADD latency 2, down from Zen 4's 3"),
    AddLatency(
        "AMD Zen to Zen 4 (families 17h and 19h, Hygon 18h)",
        lambda c: (c["vendor"] == "AuthenticAMD" and c["family"] in (0x17, 0x19))
        or (c["vendor"] == "HygonGenuine" and c["family"] == 0x18), 3,
        "AMD Software Optimization Guides for family 17h (pub. 55723) and for Zen 3 and Zen 4: FADD latency 3"),
    # by the flags, before any model number: a hypervisor may show another model (AMX on a "Rocket Lake", 0xA7)
    AddLatency(
        "Intel Golden Cove and later (Sapphire Rapids and later Xeons: AMX or AVX512-FP16 in the flags)",
        lambda c: c["vendor"] == "GenuineIntel" and bool(GOLDEN_COVE_FLAGS & c["flags"]), 2,
        "Intel 64 and IA-32 Architectures Optimization Reference Manual, Golden Cove microarchitecture: floating-point "
        "adds on the new fast adders, latency 2 (Sunny Cove's was 4); Chips and Cheese, 'Popping the Hood on Golden "
        "Cove' (2021), measured the same"),
    AddLatency(
        "Intel Haswell/Broadwell", lambda c: c["vendor"] == "GenuineIntel" and c["family"] == 6
        and c["model"] in _HASWELL_BROADWELL, 3, "Agner Fog, instruction tables: ADDSD latency 3"),
    AddLatency(
        "Intel Skylake to Ice Lake", lambda c: c["vendor"] == "GenuineIntel" and c["family"] == 6
        and c["model"] in _SKYLAKE_TO_ICE_LAKE, 4, "Agner Fog, instruction tables: ADDSD latency 4"),
]
CLOCK_CHAIN = (1 << 14, 1 << 16)  # fp64 adds per timed cumsum: the slope between the two drops the call's overhead
# a measured clock outside this is refused; the top is the fastest x86 part shipped (Core i9-14900KS, 6.2 GHz turbo)
PLAUSIBLE_GHZ = (0.5, 6.2)

TF32_NOTE = ("TF32 is used for fp32 here (cuDNN's convolutions use it by default, torch.backends.cudnn.allow_tf32), "
             "so the peak is the TF32 tensor cores' and the matmul is measured with TF32 allowed; a row's own matmuls "
             "run plain FP32 unless torch.backends.cuda.matmul.allow_tf32 is set")
DEFAULT_SIZES = {"cpu": (1024, 2048, 4096), "cuda": (2048, 4096, 8192)}
GROWTH_WORTH = 1.05  # a larger matmul size is tried only while the last one gained at least this factor
SIZE_S = 1.0  # a size's timed calls stop at ``repeats`` or once they took this long (at least two)


def parse_cpuinfo(text: str) -> dict:
    """Flags, vendor, family, model, model name, clock and physical core count from ``/proc/cpuinfo`` text."""
    processors = [dict(re.findall(r"^([^:\n]+?)\s*:\s*(.*)$", block, re.M)) for block in text.split("\n\n")]
    processors = [p for p in processors if "processor" in p]
    first = processors[0] if processors else {}
    cores = {(p.get("physical id"), p.get("core id")) for p in processors if "core id" in p}
    return {"flags": set((first.get("flags") or first.get("Features") or "").split()),
            "vendor": first.get("vendor_id", ""), "family": _int(first.get("cpu family")),
            "model": _int(first.get("model")), "model_name": first.get("model name", ""),
            "cpu_mhz": float(first["cpu MHz"]) if "cpu MHz" in first else None,
            "physical_cores": len(cores) or len(processors)}


def nominal_clock(cpuinfo: dict) -> tuple[float | None, str]:
    """The clock /proc/cpuinfo states (the model name's GHz, or 'cpu MHz'), and whence."""
    match = re.search(r"@\s*([\d.]+)\s*GHz", cpuinfo["model_name"])
    if match:
        return float(match.group(1)), "model name (base clock)"
    if cpuinfo["cpu_mhz"]:
        return cpuinfo["cpu_mhz"] / 1e3, "/proc/cpuinfo 'cpu MHz' (the current or, in a VM, nominal clock)"
    return None, "no clock found in lscpu, cpufreq or /proc/cpuinfo"


def add_latency(cpuinfo: dict) -> AddLatency | None:
    """The :data:`FP64_ADD_LATENCY` entry of this CPU, None when its microarchitecture is not in the table."""
    return next((entry for entry in FP64_ADD_LATENCY if entry.applies(cpuinfo)), None)


def cpu_clock(cpuinfo: dict, lscpu_text: str, max_freq_khz: str,
              measure_clock: Callable[[int], float | None] | None = None) -> tuple[float | None, str]:
    """The CPU clock in GHz and where it came from: lscpu's, cpufreq's, or the higher of the measured and nominal."""
    match = re.search(r"^CPU max MHz:\s*([\d.]+)", lscpu_text, re.M)
    if match and float(match.group(1)) > 0:
        return float(match.group(1)) / 1e3, "lscpu 'CPU max MHz'"
    if max_freq_khz.strip():
        return int(max_freq_khz) / 1e6, "cpufreq cpuinfo_max_freq"
    nominal, nominal_source = nominal_clock(cpuinfo)
    latency = add_latency(cpuinfo)
    if measure_clock is None or latency is None:
        return nominal, nominal_source
    measured = measure_clock(latency.cycles)
    how = f"a chain of dependent fp64 adds at {latency.cycles} cycles each ({latency.microarchitecture})"
    if measured is None or not PLAUSIBLE_GHZ[0] <= measured <= PLAUSIBLE_GHZ[1]:
        reading = "no reading" if measured is None else (
            f"{measured:.2f} GHz, outside {PLAUSIBLE_GHZ[0]}-{PLAUSIBLE_GHZ[1]} GHz (no shipped part runs there), so "
            f"refused")
        return nominal, f"{nominal_source}; the measured clock gave {reading}"
    if nominal is not None and measured <= nominal:
        return nominal, f"{nominal_source}; the measured clock, {how}, read lower ({measured:.2f} GHz)"
    return measured, f"measured clock ({how}; lscpu and cpufreq name no maximum)"


def measure_cpu_clock(latency_cycles: int, calls: int = 30, warmup_s: float = 0.05) -> float | None:
    """The clock, in GHz, of one core of this CPU, from a chain of dependent fp64 adds (None: no positive slope)."""
    vectors = [(torch.ones(n, dtype=torch.float64), torch.empty(n, dtype=torch.float64)) for n in CLOCK_CHAIN]
    deadline = time.perf_counter() + warmup_s
    while time.perf_counter() < deadline:
        torch.cumsum(vectors[0][0], 0, out=vectors[0][1])
    best = []
    for x, out in vectors:
        seconds = []
        for _ in range(calls):
            start = time.perf_counter()
            torch.cumsum(x, 0, out=out)
            seconds.append(time.perf_counter() - start)
        best.append(min(seconds))
    per_add = (best[1] - best[0]) / (CLOCK_CHAIN[1] - CLOCK_CHAIN[0])
    return latency_cycles / per_add / 1e9 if per_add > 0 else None


def cpu_peak(threads: int, cpuinfo_text: str, lscpu_text: str = "", max_freq_khz: str = "",
             measure_clock: Callable[[int], float | None] | None = None, dtype: torch.dtype = torch.float32) -> dict:
    """The peak of ``threads`` cores at ``dtype``: cores x clock x FLOP per cycle of its widest unit for ``dtype``."""
    cpuinfo = parse_cpuinfo(cpuinfo_text)
    clock_ghz, clock_source = cpu_clock(cpuinfo, lscpu_text, max_freq_khz, measure_clock)
    unit = row_covering(cpu_vector_units(), cpuinfo["flags"])
    cores = min(threads, cpuinfo["physical_cores"])
    result = {"method": "cores x clock x fp32 FLOP per cycle per core", "cores": cores, "threads": threads,
              "clock_ghz": clock_ghz, "clock_source": clock_source, "assumptions": [*CPU_ASSUMPTIONS, FLAGS_ASSUMPTION]}
    if unit is None or clock_ghz is None:
        why = "no known vector unit in the CPU flags" if unit is None else clock_source
        return {**result, "flops_per_s": None, "reason": why}
    name, per_cycle, how = unit.name, unit.flop_per_cycle, unit.how
    correction = next((c for c in CPU_CORRECTIONS if c.applies(cpuinfo)), None)
    if correction is not None:
        per_cycle, how, microarchitecture = correction.flop_per_cycle, correction.how, correction.microarchitecture
        result.update(microarchitecture=microarchitecture, assumptions=[
            *CPU_ASSUMPTIONS, f"{per_cycle} fp32 FLOP per cycle per core for {microarchitecture} ({how}), not the "
                              f"{unit.flop_per_cycle} its {name} flags suggest; source: {correction.source}"])
    if clock_source.startswith("measured clock"):
        latency = add_latency(cpuinfo)
        result["assumptions"].append(
            f"the measured clock is the one a core reaches running scalar code (all cores under vector load may run "
            f"slower), from an fp64 add latency of {latency.cycles} cycles for {latency.microarchitecture} (source: "
            f"{latency.source})")
    fp32 = {**result, "flops_per_s": cores * clock_ghz * 1e9 * per_cycle, "vector_unit": name,
            "flop_per_cycle": per_cycle, "flop_per_cycle_from": how}
    return fp32 if dtype == torch.float32 else reduced_peak(fp32, cpuinfo["flags"], dtype)


def reduced_peak(fp32: dict, flags: set[str], dtype: torch.dtype) -> dict:
    """The bf16 or int8 peak of ``fp32``'s cores, from the strongest of its reduced units in ``flags``."""
    word = "int8 ops" if dtype == torch.int8 else "bf16 FLOP"
    method = f"cores x clock x {word} per cycle per core"
    unit = row_covering(cpu_reduced_units().get(dtype, ()), flags)
    if unit is None and dtype == torch.bfloat16:
        return {**fp32, "method": method, "vector_unit": f"{fp32['vector_unit']} (bf16 emulated in the fp32 units)",
                "assumptions": [*fp32["assumptions"], "no AVX512-BF16 or AMX-BF16 in the CPU flags: torch converts "
                                                      "bf16 to fp32 around fp32 arithmetic, so the peak is the fp32 "
                                                      "units'"]}
    if unit is None:
        return {**fp32, "method": method, "flops_per_s": None,
                "reason": "no VNNI or AMX-INT8 in the CPU flags (int8 dot products are then emulated by AVX2 "
                          "multiply-add sequences; no peak is stated for them)"}
    per_cycle = unit.per_cycle or unit.times * fp32["flop_per_cycle"]
    return {**fp32, "method": method, "flops_per_s": fp32["cores"] * fp32["clock_ghz"] * 1e9 * per_cycle,
            "vector_unit": unit.name, "flop_per_cycle": per_cycle, "flop_per_cycle_from": unit.how}


def gpu_peak(gpu_name: str, dtype: torch.dtype, tf32: bool) -> dict:
    """Datasheet peak of a known NVIDIA GPU at ``dtype`` (fp32 uses the TF32 tensor-core peak when ``tf32``)."""
    result = {"method": "NVIDIA datasheet peak, dense (no 2:4 sparsity), boost clock", "gpu": gpu_name}
    peaks = row_covering(gpu_peaks(), gpu_name)
    if peaks is None:
        return {**result, "flops_per_s": None, "reason": not_in_table(gpu_peaks(), gpu_name)}
    if dtype in (torch.float16, torch.bfloat16):
        unit, tflops = "fp16/bf16 tensor cores", peaks.fp16
    elif dtype == torch.float32 and tf32 and peaks.tf32:
        unit, tflops = "TF32 tensor cores (TF32 is allowed for fp32 convolutions or matmuls)", peaks.tf32
    elif dtype == torch.float32:
        unit, tflops = "fp32 CUDA cores", peaks.fp32
    else:
        return {**result, "table_entry": peaks.label, "flops_per_s": None, "reason": f"no peak listed for {dtype}"}
    return {**result, "table_entry": peaks.label, "unit": unit, "flops_per_s": tflops * 1e12}


def fp32_math(device: torch.device, cudnn_tf32: bool, matmul_tf32: bool) -> str:
    """``tf32`` on CUDA where cuDNN or cuBLAS may use TF32 for fp32, else ``fp32``."""
    return "tf32" if torch.device(device).type == "cuda" and (cudnn_tf32 or matmul_tf32) else "fp32"


def theoretical_peak(device: torch.device, dtype: torch.dtype, threads: int | None = None, tf32: bool = False) -> dict:
    """The hardware's peak FLOP/s at ``dtype`` (int8: ops/s): the CPU's for ``threads`` cores, or a GPU datasheet's."""
    device = torch.device(device)
    if device.type == "cuda":
        return gpu_peak(torch.cuda.get_device_name(device), dtype, tf32)
    if dtype not in (torch.float32, *cpu_reduced_units()):
        return {"method": "cores x clock x fp32 FLOP per cycle per core", "flops_per_s": None,
                "reason": f"CPU peaks are computed for float32, bfloat16 and int8, not {dtype}"}
    return cpu_peak(threads or torch.get_num_threads(), _or_empty(Path("/proc/cpuinfo").read_text),
                    _or_empty(lambda: subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout),
                    _or_empty(Path("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq").read_text),
                    measure_cpu_clock, dtype)


def measured_matmul_ceiling(device: torch.device, dtype: torch.dtype = torch.float32, sizes=None,
                            repeats: int = 5, threads: int | None = None, tf32: bool = False) -> dict:
    """Best FLOP/s of ``torch.mm`` on n x n matrices over ``sizes``, ``repeats`` calls each."""
    device = torch.device(device)
    sizes = tuple(sizes or DEFAULT_SIZES["cuda" if device.type == "cuda" else "cpu"])
    previous_threads, previous_tf32 = torch.get_num_threads(), torch.backends.cuda.matmul.allow_tf32
    if threads:
        torch.set_num_threads(threads)
    torch.backends.cuda.matmul.allow_tf32 = tf32
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
        torch.backends.cuda.matmul.allow_tf32 = previous_tf32
    best_size = max(samples, key=lambda n: max(samples[n]))
    return {"flops_per_s": max(samples[best_size]), "size": best_size,
            "samples_flops_per_s": {str(n): values for n, values in samples.items()},
            "method": f"best of {repeats} timed torch.mm calls (fewer, at least 2, once they took {SIZE_S:g} s) "
                      f"at each n in {list(samples)} "
                      f"(n x n times n x n, 2n^3 FLOP; of {list(sizes)}, stopping at the first size that gained "
                      f"under {GROWTH_WORTH - 1:.0%}), one warm-up call per size on CUDA",
            "dtype": str(dtype), "device": str(device), "threads": used_threads, "tf32": tf32}


def _time_matmuls(n: int, device: torch.device, dtype: torch.dtype, repeats: int) -> list[float]:
    """Seconds of ``repeats`` synchronized ``torch.mm`` calls on n x n matrices (fewer once they took ``SIZE_S``)."""
    a, b = (torch.randn(n, n, device=device, dtype=dtype) for _ in range(2))
    out = torch.empty(n, n, device=device, dtype=dtype)
    if device.type == "cuda":  # the CPU's first call is one of those timed: the best of them leaves it out
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
        if len(seconds) >= 2 and sum(seconds) >= SIZE_S:
            break
    return seconds


def _int(text: str | None) -> int | None:
    """A /proc/cpuinfo number (decimal), None when absent or not a number."""
    return int(text) if text is not None and text.strip().isdigit() else None


def _or_empty(read: Callable[[], str]) -> str:
    """``read()``'s text, or "" where the file or command cannot be read."""
    try:
        return read()
    except (OSError, subprocess.SubprocessError):
        return ""


def device_ceilings(device: torch.device, dtype: torch.dtype, threads: int, measure: bool) -> dict:
    """The device's FLOP/s ceilings at ``dtype`` and ``threads``: its peak and, when ``measure``, the matmul's."""
    tf32 = dtype == torch.float32 and fp32_math(device, torch.backends.cudnn.allow_tf32,
                                                torch.backends.cuda.matmul.allow_tf32) == "tf32"
    peak = theoretical_peak(device, dtype, threads, tf32)
    ceiling = {"peak_flops_per_s": peak.get("flops_per_s"), "peak_method": peak.get("method"),
               "peak_assumptions": peak.get("assumptions") or peak.get("reason")}
    if peak.get("clock_source"):
        ceiling.update(peak_clock_ghz=peak.get("clock_ghz"), peak_clock_source=peak["clock_source"])
    if tf32:
        ceiling.update(math="tf32", math_note=TF32_NOTE)
    if measure and dtype == torch.int8:
        ceiling.update(measured_note="no int8 matmul is measured (torch.mm has no int8 kernel)")
    elif measure:
        measured = measured_matmul_ceiling(device, dtype, threads=threads, tf32=tf32)
        ceiling.update(measured_flops_per_s=measured["flops_per_s"], measured_method=measured["method"])
    return peak_not_below_measured(ceiling)


def peak_not_below_measured(ceiling: dict) -> dict:
    """``ceiling`` with its peak raised to the measured matmul where it read below it, and ``peak_note`` saying so."""
    peak, measured = ceiling.get("peak_flops_per_s"), ceiling.get("measured_flops_per_s")
    if not peak or not measured or measured <= peak:
        return ceiling
    source = ceiling.get("peak_clock_source")
    clock = f" at {ceiling['peak_clock_ghz']:.2f} GHz ({source})" if source and ceiling.get("peak_clock_ghz") else ""
    return {**ceiling, "peak_flops_per_s": measured, "peak_stated_flops_per_s": peak,
            "peak_note": f"the peak stated{clock}, {peak / 1e9:.0f} GFLOP/s, is below the measured matmul, "
                         f"{measured / 1e9:.0f} GFLOP/s, so the cores ran faster than that clock; the peak is taken "
                         f"as the measured matmul"}


@dataclass(frozen=True)
class DeviceCeiling(Coded):
    """A device's ceilings in one environment (``values``: ``{which}_{UNIT}``); a subclass is a registered part."""

    JOINS_RECORD: ClassVar[bool] = False
    fails_run: ClassVar[bool] = False
    KIND: ClassVar[str]
    RESULTS_KEY: ClassVar[str]
    UNIT: ClassVar[str]

    environment: str
    device: str

    def __init_subclass__(cls, kind: str, results_key: str, unit: str, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        cls.KIND, cls.RESULTS_KEY, cls.UNIT = kind, results_key, unit
        register_part(cls)

    @property
    def key(self) -> tuple:
        """Where these ceilings hold: every field but ``values`` (environment, device, then the subclass's own)."""
        return tuple(getattr(self, f.name) for f in fields(self) if f.name != "values")

    def share(self, achieved: Optional[float], which: str) -> Optional[float]:
        """``achieved`` (in :attr:`UNIT`) as a share of the ``which`` ceiling (None when unknown)."""
        ceiling = self.values.get(f"{which}_{self.UNIT}")
        return achieved / ceiling if achieved and ceiling else None


@dataclass(frozen=True)
class Ceiling(DeviceCeiling, kind="ceiling", results_key="ceilings", unit="flops_per_s"):
    """A device's FLOP/s ceilings in one environment at one compute dtype and thread count."""

    dtype: str  # float32, float16, bfloat16, int8: the compute dtype of its records' precisions (compute_dtype)
    threads: int
    values: dict  # device_ceilings(): peak_flops_per_s, peak_method, ..., measured_flops_per_s where measured

    @staticmethod
    def scope_of(record) -> tuple:
        """The scope of the ceilings that apply to ``record`` (:class:`~trtbench.core.record.Record`)."""
        case = record.case
        return (record.environment, case.device, dtype_name(compute_dtype(case.precision)), case.threads)
