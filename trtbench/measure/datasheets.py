"""Datasheet figures of GPUs and CPU vector units (``datasheets.yaml``), and the row that covers a device."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from typing import Optional, Sequence, TypeVar, Union

import torch
import yaml


@dataclass(frozen=True)
class GpuRow:
    """A row of a GPU table: the GPUs it covers (``pattern``, searched for in the upper-cased name) and its label."""

    pattern: str
    label: str

    def covers(self, gpu_name: str) -> bool:
        return re.search(self.pattern, gpu_name.upper()) is not None


@dataclass(frozen=True)
class Bandwidth(GpuRow):
    """A GPU's datasheet memory bandwidth, in TB/s."""

    tb_per_s: float


@dataclass(frozen=True)
class Peaks(GpuRow):
    """A GPU's dense datasheet peaks in TFLOP/s at boost clock: CUDA cores' ``fp32``, tensor cores' others."""

    fp32: float
    tf32: Optional[float]
    fp16: float


@dataclass(frozen=True)
class CpuUnit:
    """A row of a CPU table: a unit, ``name``, that a CPU has when its flags hold all of the unit's ``flags``."""

    flags: frozenset[str]
    name: str

    def covers(self, cpu_flags: set[str]) -> bool:
        return self.flags <= cpu_flags


@dataclass(frozen=True)
class VectorUnit(CpuUnit):
    """A CPU's fp32 vector unit: fp32 FLOP per cycle per core, and ``how`` that count comes about."""

    flop_per_cycle: int
    how: str


@dataclass(frozen=True)
class ReducedUnit(CpuUnit):
    """A CPU's bf16 or int8 unit: ops per cycle per core, ``per_cycle`` or ``times`` the fp32 vector unit's."""

    per_cycle: Optional[int]
    times: Optional[int]
    how: str


Row = TypeVar("Row", bound=Union[GpuRow, CpuUnit])


def row_covering(table: Sequence[Row], device: str | set[str]) -> Optional[Row]:
    """The first row of ``table`` that covers ``device`` (a GPU's name, a CPU's flags), or None."""
    return next((row for row in table if row.covers(device)), None)


def not_in_table(table: Sequence[GpuRow], gpu_name: str) -> str:
    return f"'{gpu_name}' is not in the table ({', '.join(row.label for row in table)})"


@cache
def memory_bandwidths() -> tuple[Bandwidth, ...]:
    return tuple(Bandwidth(**row) for row in _sheets()["memory_bandwidth"])


@cache
def gpu_peaks() -> tuple[Peaks, ...]:
    return tuple(Peaks(**row) for row in _sheets()["peak_tflops"])


@cache
def cpu_vector_units() -> tuple[VectorUnit, ...]:
    return tuple(VectorUnit(**{**row, "flags": frozenset(row["flags"])}) for row in _sheets()["cpu_vector_units"])


@cache
def cpu_reduced_units() -> dict[torch.dtype, tuple[ReducedUnit, ...]]:
    """Each reduced compute dtype's units (bfloat16, int8), the strongest first."""
    return {getattr(torch, dtype): tuple(ReducedUnit(**{**row, "flags": frozenset(row["flags"])}) for row in rows)
            for dtype, rows in _sheets()["cpu_reduced_units"].items()}


@cache
def _sheets() -> dict:
    return yaml.safe_load(files("trtbench.measure").joinpath("datasheets.yaml").read_text(encoding="utf-8"))
