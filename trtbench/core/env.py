"""What the run ran on (versions, CPU, threads, GPU), the torch settings a build group runs under, thread facts."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Optional

import torch

BUSY_THRESHOLD = 0.25  # share of CPU time used by others before the run that earns a warning
CGROUP_ROOT = Path("/sys/fs/cgroup")


def _cpuinfo_value(prefixes: tuple[str, ...]) -> str | None:
    """/proc/cpuinfo's first line's value for one of ``prefixes`` ("" for none; None: unreadable)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            return next((line.split(":", 1)[1] for line in fh if line.startswith(prefixes)), "")
    except OSError:
        return None


def cpu_model() -> str:
    """The CPU's marketing name (from /proc/cpuinfo on Linux)."""
    name = _cpuinfo_value(("model name",))
    return name.strip() if name else platform.processor() or platform.machine()


INT8_FLAGS = ("avx512_vnni", "avx_vnni", "amx_int8", "amx_bf16", "amx_tile")  # x86 int8 dot-product units
# x86 bf16 units, by /proc/cpuinfo flag, the stronger first: AMX's tile matmuls, AVX-512's bf16 dot products
BF16_UNITS = {"amx_bf16": "AMX-BF16", "avx512_bf16": "AVX512-BF16"}
NATIVE, EMULATED = "native", "emulated"  # how a build's bf16 is computed (Bf16Compute.mode)


def cpu_flags(flags_text: str | None = None) -> set[str] | None:
    """The CPU's flags from /proc/cpuinfo (``flags_text``: a flags line instead); None where it cannot be read."""
    text = cpu_flags_text() if flags_text is None else flags_text
    return None if text is None else set(text.split())


def cpu_flags_text() -> str | None:
    """The CPU's flags line from /proc/cpuinfo (x86 ``flags``, Arm ``Features``); None where it cannot be read."""
    return _cpuinfo_value(("flags", "Features"))


def cpu_int8_features(flags_text: str | None = None) -> dict:
    """The CPU's INT8 dot-product units (VNNI, AMX) in ``flags_text`` (default: this machine's flags line)."""
    flags = cpu_flags(flags_text)
    if flags is None:
        return {"known": False}
    present = [flag for flag in INT8_FLAGS if flag in flags]
    return {"known": bool(flags), "flags": present, "vnni": bool({"avx512_vnni", "avx_vnni"} & flags),
            "amx": any(flag.startswith("amx") for flag in present)}


@dataclass(frozen=True)
class Bf16Compute:
    """How bf16 is computed on a device (``native`` on ``unit``, or ``emulated``), and ``why``."""

    mode: str
    unit: Optional[str]
    why: str

    @property
    def text(self) -> str:
        return f"{self.mode} ({self.why})"


def bf16_compute(device: torch.device | str = "cpu", flags_text: str | None = None) -> Bf16Compute:
    """Whether ``device`` computes bf16 natively (a CPU's AMX or AVX512 bf16 flags; CUDA's bf16 tensor cores)."""
    if torch.device(device).type == "cuda":
        native = torch.cuda.is_available() and torch.cuda.is_bf16_supported(including_emulation=False)
        return Bf16Compute(NATIVE if native else EMULATED, "bf16 tensor cores" if native else None,
                           "bf16 tensor cores (compute capability 8.0+)" if native
                           else "no bf16 tensor cores before compute capability 8.0")
    flags = cpu_flags(flags_text)
    unit = next((name for flag, name in BF16_UNITS.items() if flag in (flags or ())), None)
    if unit is not None:
        return Bf16Compute(NATIVE, unit, f"{unit} in the CPU flags")
    seen = "the CPU flags could not be read" if flags is None else "neither AVX512-BF16 nor AMX-BF16 in the CPU flags"
    return Bf16Compute(EMULATED, None, f"{seen}: torch computes bf16 in fp32 units")


def nvidia_driver_version() -> str | None:
    """The NVIDIA driver version reported by nvidia-smi, if present (absent: an OSError)."""
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
    """Everything a reader needs to reproduce or compare a result."""
    import torchvision

    env = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "cpu_int8": cpu_int8_features(),
        "bf16": bf16_compute(device).text,
        "default_threads": default_threads(),
        "device": str(device),
        "cpu_busy_at_start": cpu_busy_fraction(),
        "cudnn_benchmark": cudnn_benchmark,
        "grad_enabled": False,
        "inference_mode": True,
        "fp32_math": pin_fp32_math(),
    }
    env.update(gpu_info(device))
    env["machine"] = machine_fingerprint(env, cpu_flags_text())
    env["libraries"] = library_versions()
    env["id"] = environment_id(env)
    return env


def cgroup_cpu_quota(root: Path = CGROUP_ROOT, self_cgroup: str | None = None) -> tuple[float, str] | None:
    """The tightest CFS CPU quota on this process's cgroups (v2 or v1), in CPUs, and the file that sets it."""
    if self_cgroup is None:
        try:
            self_cgroup = Path("/proc/self/cgroup").read_text(encoding="utf-8")
        except OSError:
            return None
    quotas = []
    for line in self_cgroup.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if controllers == "":  # the v2 (unified) hierarchy
            for directory in _cgroup_dirs([root, root / "unified"], path):
                quotas += _v2_quota(directory / "cpu.max")
        elif "cpu" in controllers.split(","):
            for directory in _cgroup_dirs([root / controllers, root / "cpu", root / "cpu,cpuacct"], path):
                quotas += _v1_quota(directory / "cpu.cfs_quota_us", directory / "cpu.cfs_period_us")
    return min(quotas) if quotas else None


def _cgroup_dirs(mounts: list[Path], path: str) -> list[Path]:
    """The existing directories of cgroup ``path`` and of its ancestors under each of ``mounts``."""
    cgroup = PurePosixPath(path.strip() or "/")
    relative = [cgroup.relative_to("/"), *(parent.relative_to("/") for parent in cgroup.parents)]
    return list(dict.fromkeys(mount / part for mount in mounts for part in relative if (mount / part).is_dir()))


def _v2_quota(path: Path) -> list[tuple[float, str]]:
    try:
        quota, period = path.read_text(encoding="utf-8").split()[:2]
        return [] if quota == "max" else [(int(quota) / int(period), f"cgroup v2 {path} '{quota} {period}'")]
    except (OSError, ValueError):
        return []


def _v1_quota(quota_path: Path, period_path: Path) -> list[tuple[float, str]]:
    try:
        quota, period = int(quota_path.read_text(encoding="utf-8")), int(period_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [(quota / period, f"cgroup v1 {quota_path} {quota} / cpu.cfs_period_us {period}")] if quota > 0 else []


def default_threads(environ: Mapping[str, str] = os.environ, affinity: set[int] | None = None,
                    cgroup_root: Path = CGROUP_ROOT, self_cgroup: str | None = None) -> dict:
    """The thread count a run uses where its config names none, and where it comes from (docs/config.md)."""
    omp = environ.get("OMP_NUM_THREADS", "").strip()
    if omp.isdigit() and int(omp) > 0:
        return {"threads": int(omp), "source": f"OMP_NUM_THREADS={omp}"}
    total = os.cpu_count() or 1
    limits = [(total, f"os.cpu_count(): {total} CPUs, with no CPU affinity, cgroup CPU quota or Slurm allocation "
                      f"below it")]
    if affinity is None and hasattr(os, "sched_getaffinity"):
        affinity = os.sched_getaffinity(0)
    if affinity is not None:
        limits.append((len(affinity), f"CPU affinity (sched_getaffinity): {len(affinity)} of {total} CPUs"))
    quota = cgroup_cpu_quota(cgroup_root, self_cgroup)
    if quota is not None:
        limits.append((max(1, int(quota[0])), f"CPU quota of {quota[0]:g} CPUs: {quota[1]}"))
    slurm = environ.get("SLURM_CPUS_PER_TASK", "").strip()
    if slurm.isdigit() and int(slurm) > 0:
        limits.append((int(slurm), f"SLURM_CPUS_PER_TASK={slurm} (the Slurm job's CPUs per task)"))
    threads, source = min(limits, key=lambda limit: limit[0])  # the first of the fewest
    return {"threads": threads, "source": source}


OPTIONAL_LIBRARIES = ("onnx", "onnxruntime", "onnxruntime-gpu", "openvino", "torch_tensorrt", "tensorrt")
# what makes two machines measure alike; load, time and paths are left out on purpose
FINGERPRINT_KEYS = ("cpu", "cpu_count", "device", "gpu_name", "compute_capability", "driver", "cuda", "cudnn",
                    "python", "torch", "torchvision", "libraries")


def library_versions() -> dict:
    """Installed versions of the optional backends, read from package metadata (nothing is imported)."""
    from importlib import metadata

    versions = {}
    for name in OPTIONAL_LIBRARIES:
        with contextlib.suppress(metadata.PackageNotFoundError):
            versions[name] = metadata.version(name)
    return versions


def environment_id(env: dict) -> str:
    """A stable id of the machine and software a result was measured on (same id, same setup)."""
    stable = {key: env.get(key) for key in FINGERPRINT_KEYS}
    return hashlib.sha256(json.dumps(stable, sort_keys=True, default=str).encode()).hexdigest()[:12]


MACHINE_KEYS = ("cpu", "cpu_count", "gpu_name", "gpu_memory_gib")  # what the machine is; never its name or load


def machine_fingerprint(env: dict, flags_text: str | None = None) -> dict:
    """The machine a run measured on, as a history series keys it (its CPU, flags, cores and GPU), with its ``id``."""
    flags = flags_text.split() if flags_text is not None else (env.get("cpu_int8") or {}).get("flags") or []
    facts = {**{key: env.get(key) for key in MACHINE_KEYS}, "cpu_flags": sorted(set(flags))}
    text = json.dumps(facts, sort_keys=True, default=str)
    return {**facts, "id": hashlib.sha256(text.encode()).hexdigest()[:12]}


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


FPMATH_ENV = "ONEDNN_DEFAULT_FPMATH_MODE"  # oneDNN's default math mode for f32 primitives, from the environment


def pin_fp32_math() -> dict:
    """torch's fp32 math pinned to IEEE fp32 (no bf32 or TF32), and what is set, with oneDNN's environment variable."""
    torch.set_float32_matmul_precision("highest")  # matmuls: cuBLAS without TF32, oneDNN's matmul ieee
    mkldnn = torch.backends.mkldnn
    mkldnn.conv.fp32_precision = mkldnn.rnn.fp32_precision = "ieee"  # the generic flag would mix torch's two APIs
    return {"float32_matmul_precision": torch.get_float32_matmul_precision(),
            "mkldnn_fp32_precision": {op: getattr(mkldnn, op).fp32_precision for op in ("conv", "matmul", "rnn")},
            FPMATH_ENV: os.environ.get(FPMATH_ENV, "unset")}


@contextlib.contextmanager
def torch_settings(threads: int, cudnn_benchmark: bool) -> Iterator[None]:
    """Set torch's thread count and cuDNN autotuning for a block (fp32 math pinned), then restore them."""
    old_threads, old_cudnn = torch.get_num_threads(), torch.backends.cudnn.benchmark
    pin_fp32_math()
    torch.set_num_threads(threads)
    torch.backends.cudnn.benchmark = cudnn_benchmark
    try:
        yield
    finally:
        torch.set_num_threads(old_threads)
        torch.backends.cudnn.benchmark = old_cudnn


def torch_thread_facts() -> dict:
    """This process's torch threads and OpenMP wait policy, as a record states where it was timed."""
    return {"intra_op_threads": torch.get_num_threads(), "inter_op_threads": torch.get_num_interop_threads(),
            "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "unset (runtime default)")}
