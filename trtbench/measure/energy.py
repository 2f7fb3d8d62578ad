"""Energy counters (NVML on a GPU, RAPL on a CPU) and the idle draw (docs/measuring.md, "Energy per inference")."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Protocol

import torch

POWERCAP = Path("/sys/class/powercap")
IDLE_S = 0.5  # the idle draw is read over this long


class EnergyCounter(Protocol):
    """A cumulative energy counter of the device a process times on."""

    source: str  # what it reads: "nvml" or "rapl"

    def joules(self) -> float:
        """Joules counted so far (monotonic: wrap-around already unwrapped)."""

    def state(self) -> dict:
        """The device's clocks and temperature now, where the counter's library gives them."""


@dataclass(frozen=True)
class EnergyReading:
    """The joules counted over ``seconds`` of some work, and its ``units`` (calls, tokens)."""

    joules: float
    seconds: float
    units: int = 1


class NoCounter(Exception):
    """No energy counter is readable for the device; its message says why."""


class NvmlCounter:
    """NVML's energy counter of one GPU, with its clocks and temperature (the ``pynvml`` module given)."""

    source = "nvml"

    def __init__(self, nvml, device: torch.device):
        self.nvml = nvml
        nvml.nvmlInit()
        index = device.index if device.index is not None else torch.cuda.current_device()
        uuid = getattr(torch.cuda.get_device_properties(index), "uuid", None)
        # NVML numbers GPUs as the driver does, CUDA as CUDA_VISIBLE_DEVICES orders them: the UUID, else the index
        try:
            self.handle = nvml.nvmlDeviceGetHandleByUUID(f"GPU-{uuid}")
        except nvml.NVMLError:
            self.handle = nvml.nvmlDeviceGetHandleByIndex(index)

    def joules(self) -> float:
        return self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.handle) / 1e3  # mJ

    def state(self) -> dict:
        nvml, handle = self.nvml, self.handle
        return {"sm_clock_mhz": nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM),
                "memory_clock_mhz": nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_MEM),
                "temperature_c": nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU)}


@dataclass
class _Zone:
    """One RAPL package counter: its file, its wrap, its last raw value and what was counted before it."""

    energy: Path
    wrap_uj: int
    last_uj: int
    total_uj: int = 0

    def read(self) -> int:
        raw = int(self.energy.read_text())
        self.total_uj += raw - self.last_uj if raw >= self.last_uj else self.wrap_uj - self.last_uj + raw
        self.last_uj = raw
        return self.total_uj


class RaplCounter:
    """RAPL's package energy counters under ``root`` (``/sys/class/powercap``), summed and unwrapped."""

    source = "rapl"

    def __init__(self, root: Optional[Path] = None):
        root = root or POWERCAP
        packages = sorted(p for p in root.glob("intel-rapl:*") if p.name.count(":") == 1)
        if not packages:
            raise NoCounter(f"no RAPL counter under {root} (this kernel or VM exposes no intel-rapl zone)")
        try:
            self.zones = [_Zone(p / "energy_uj", int((p / "max_energy_range_uj").read_text()),
                                int((p / "energy_uj").read_text())) for p in packages]
        except OSError as err:  # energy_uj is root-only on kernels since 5.10 (a side channel: CVE-2020-8694)
            raise NoCounter(f"RAPL's counters under {root} cannot be read here "
                            f"({err.strerror}: {err.filename})") from None

    def joules(self) -> float:
        return sum(zone.read() for zone in self.zones) / 1e6

    def state(self) -> dict:
        return {}


def energy_counter(device: torch.device, powercap: Optional[Path] = None) -> EnergyCounter:
    """The energy counter of ``device`` (NVML's, RAPL's); :class:`NoCounter` where none reads."""
    if device.type == "cuda":
        try:
            import pynvml
        except ImportError:
            raise NoCounter("pynvml is not installed (pip install nvidia-ml-py, or trtbench's energy extra)") from None
        try:
            counter = NvmlCounter(pynvml, device)
            counter.joules()
        except pynvml.NVMLError as err:  # an older GPU or driver without the counter, or no NVML library
            raise NoCounter(f"NVML's energy counter is not readable here: {err}") from None
        return counter
    if device.type == "cpu":
        return RaplCounter(powercap)
    raise NoCounter(f"no energy counter for device type {device.type}")


def idle_power_w(counter: EnergyCounter, seconds: float = IDLE_S) -> float:
    """The device's draw doing nothing, in watts: the counter over ``seconds`` of sleep."""
    start, began = counter.joules(), time.perf_counter()
    time.sleep(seconds)
    return (counter.joules() - start) / (time.perf_counter() - began)


def counter_or_none(device: torch.device) -> Optional[EnergyCounter]:
    """:func:`energy_counter`, or None where there is none (a timing process then reads no energy)."""
    try:
        return energy_counter(device)
    except NoCounter:
        return None
