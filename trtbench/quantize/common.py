"""What every backend's quantizer takes: the calibration batches and the settings (with the fallback's exclusions)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

import torch

from trtbench.core.errors import Unavailable

CALIBRATION_METHODS = ("minmax", "entropy", "percentile")


@dataclass(frozen=True)
class QuantSettings:
    """How to quantize: the calibration method, per-channel weights, and the layers kept in fp32 (backend's names)."""

    method: str = "minmax"
    per_channel: bool = True
    exclude: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.method not in CALIBRATION_METHODS:
            raise ValueError(f"calibration method {self.method!r}: use one of {', '.join(CALIBRATION_METHODS)}")

    def require_known(self, known: Iterable[str], what: str) -> None:
        """A ValueError where a layer of ``exclude`` is not among ``known`` (``what`` those are)."""
        known = set(known)
        unknown = [name for name in self.exclude if name not in known]
        if unknown:
            raise ValueError(f"cannot keep {unknown} in fp32: not {what} (those are {sorted(known)})")


CalibrationBatches = Sequence[tuple[torch.Tensor, ...]]  # each item: one call's positional inputs


class QuantizationUnavailable(Unavailable):
    """A backend's INT8 path cannot run here (a library missing or broken, no CUDA): the variant is skipped."""
