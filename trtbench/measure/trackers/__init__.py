"""Trackers: what is read around each timed block of calls, in the process that makes them, one module each: page
faults (:mod:`.faults`), the launch-bound share on CUDA (:mod:`.launch`), energy (:mod:`.energy`).

A tracker (:class:`~.base.Tracker`) starts just before a block's timed calls and stops just after them, giving its
value for the block. :func:`~trtbench.measure.timing.time_calls` keeps each value in its block's ``tracked`` by the
tracker's ``key``, and :class:`~trtbench.measure.timing.RawTiming` a list of them per key, one per block
(:meth:`~trtbench.measure.timing.RawTiming.kept`); the tracker's module summarises that list for a record. A new
tracker: its module here, and its line in :func:`block_trackers`.
"""

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
    """The trackers of a process timing on ``device``: page faults; on CUDA, the launch-bound share; with the
    device's energy ``counter`` (None: none readable), energy."""
    return (FaultsTracker(), *((LaunchTracker(),) if device.type == "cuda" else ()),
            *((EnergyTracker(counter),) if counter is not None else ()))
