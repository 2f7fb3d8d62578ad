"""Energy per block, and a record's joules per call above the idle draw (docs/measuring.md, "Energy per inference")."""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass
from typing import Optional

import numpy as np
import torch

from trtbench.core.stats import median_ci_halfwidth
from trtbench.measure.energy import EnergyCounter, EnergyReading, NoCounter, energy_counter, idle_power_w
from trtbench.measure.trackers.base import Calls


class EnergyTracker:
    """The joules and seconds of the device's energy ``counter`` over a block, with its calls."""

    key = "energy"

    def __init__(self, counter: EnergyCounter):
        self.counter, self.at = counter, (0.0, 0.0)

    def start(self) -> None:
        self.at = (self.counter.joules(), time.perf_counter())

    def stop(self, calls: Calls) -> EnergyReading:
        return EnergyReading(self.counter.joules() - self.at[0], time.perf_counter() - self.at[1], len(calls.host_ms))


def energy_metrics(blocks: list[EnergyReading], idle_w: float, unit: str = "call") -> Optional[dict]:
    """A record's joules per ``unit`` above the idle draw (median, 95% interval) and its power; None without blocks."""
    blocks = [b for b in blocks if b.seconds > 0 and b.units > 0]
    if not blocks:
        return None
    per = np.sort([(b.joules - idle_w * b.seconds) / b.units for b in blocks])
    half = median_ci_halfwidth(per)
    median = float(np.median(per))
    power = float(np.median([b.joules / b.seconds for b in blocks]))
    return {f"joules_per_{unit}": median,
            f"joules_per_{unit}_ci": [median - half, median + half] if math.isfinite(half) else None,
            "average_power_w": power, "idle_power_w": idle_w, "blocks": len(blocks)}


@dataclass(frozen=True)
class PointEnergy:
    """What a point's records share for energy: counter, idle draw, state at start and end."""

    counter: Optional[EnergyCounter]
    reason: str = ""
    idle_w: float = 0.0
    start: Optional[dict] = None
    end: Optional[dict] = None

    @classmethod
    def before_rounds(cls, device: torch.device) -> "PointEnergy":
        try:
            counter = energy_counter(device)
        except NoCounter as err:
            return cls(None, str(err))
        return cls(counter, idle_w=idle_power_w(counter), start=counter.state())

    def after_rounds(self) -> "PointEnergy":
        """This point's energy with the device's state now, at the end of its rounds."""
        return dataclasses.replace(self, end=self.counter.state()) if self.counter is not None else self

    def through(self, later: "PointEnergy") -> "PointEnergy":
        """This point's energy through a later turn's rounds: ``later``'s end."""
        return dataclasses.replace(self, end=later.end)

    def metrics(self, blocks: list[EnergyReading], unit: str = "call") -> dict:
        """A record's ``metrics.energy`` from its blocks and the device's state; without a counter, why."""
        if self.counter is None:
            return {"unavailable": self.reason}
        energy = energy_metrics(blocks, self.idle_w, unit)
        if energy is None:
            return {"unavailable": f"no block of this row read the {self.counter.source} counter"}
        return {"source": self.counter.source, **energy, "state_start": self.start, "state_end": self.end}
