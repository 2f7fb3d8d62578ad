"""NVIDIA's datasheet figures by GPU, kept in ``datasheets.yaml`` beside this module and read into named rows: memory
bandwidth (:func:`memory_bandwidths`) and dense peaks (:func:`gpu_peaks`), and the row that covers a device."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from typing import Optional, Sequence, TypeVar

import yaml


@dataclass(frozen=True)
class GpuRow:
    """A row of a datasheet table: the GPUs it covers (``pattern``, a regular expression searched for in the
    upper-cased device name) and its ``label``."""

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
    """A GPU's datasheet peaks in TFLOP/s, dense (no 2:4 sparsity), at boost clock: ``fp32`` on its CUDA cores,
    ``tf32`` and ``fp16`` (bf16 the same) on its tensor cores (``tf32`` None: it has no TF32 tensor cores)."""

    fp32: float
    tf32: Optional[float]
    fp16: float


Row = TypeVar("Row", bound=GpuRow)


def row_covering(table: Sequence[Row], gpu_name: str) -> Optional[Row]:
    """The first row of ``table`` (most specific first) that covers ``gpu_name``, or None."""
    return next((row for row in table if row.covers(gpu_name)), None)


def not_in_table(table: Sequence[GpuRow], gpu_name: str) -> str:
    return f"'{gpu_name}' is not in the table ({', '.join(row.label for row in table)})"


@cache
def memory_bandwidths() -> tuple[Bandwidth, ...]:
    return tuple(Bandwidth(**row) for row in _sheets()["memory_bandwidth"])


@cache
def gpu_peaks() -> tuple[Peaks, ...]:
    return tuple(Peaks(**row) for row in _sheets()["peak_tflops"])


@cache
def _sheets() -> dict:
    return yaml.safe_load(files("trtbench.measure").joinpath("datasheets.yaml").read_text(encoding="utf-8"))
