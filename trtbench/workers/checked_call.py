"""The accuracy check's call: one untimed call where the variant is timed, with output, memory, warnings, time."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Optional

import torch

from trtbench.building.stage import capture_warnings
from trtbench.profiling.memory import track_peak
from trtbench.measure.energy import EnergyCounter, EnergyReading
from trtbench.measure.timing import synchronize


@dataclass(frozen=True)
class CheckedCall:
    output: Any
    peak_memory: dict  # trtbench.profiling.memory.track_peak's
    warnings: list[str]
    call_s: float
    energy: Optional[EnergyReading] = None  # the device's energy counter around the call


def checked_call(call: Callable[[], Any], device: torch.device, meter: Optional[EnergyCounter] = None) -> CheckedCall:
    """The call, synchronized; with ``meter``, the device's energy counter read around it."""
    def timed():
        joules, started = meter.joules() if meter is not None else None, time.perf_counter()
        output = call()
        synchronize(device)
        took = time.perf_counter() - started
        return output, took, EnergyReading(meter.joules() - joules, took) if meter is not None else None

    ((output, call_s, energy), memory), caught = capture_warnings(lambda: track_peak(timed, device))
    return CheckedCall(output, memory, caught, call_s, energy)
