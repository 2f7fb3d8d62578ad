"""Trackers: what is read around each timed block of calls, one module each (docs/architecture.md)."""

from __future__ import annotations

from typing import Optional

import torch

from trtbench.measure.energy import EnergyCounter
from trtbench.measure.trackers.base import Calls, Tracker
from trtbench.measure.trackers.energy import EnergyTracker
from trtbench.measure.trackers.faults import FaultsTracker
from trtbench.measure.trackers.launch import LaunchTracker

__all__ = ["Calls", "Tracker", "block_trackers"]


def block_trackers(device: torch.device, counter: Optional[EnergyCounter]) -> tuple[Tracker, ...]:
    """The trackers of a process on ``device``: faults, launch share on CUDA, energy with a counter."""
    return (FaultsTracker(), *((LaunchTracker(),) if device.type == "cuda" else ()),
            *((EnergyTracker(counter),) if counter is not None else ()))
