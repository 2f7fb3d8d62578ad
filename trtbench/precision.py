"""Precisions a variant can be built and benchmarked at."""

from __future__ import annotations

import torch

PRECISIONS: dict[str, torch.dtype] = {"fp32": torch.float32, "fp16": torch.float16}


def precision_dtype(name: str) -> torch.dtype:
    """The floating dtype that parameters and float inputs take at precision ``name``."""
    return PRECISIONS[name]


def unsupported_reason(precision: str, device: torch.device) -> str | None:
    """Why ``precision`` is not benchmarked on ``device`` (None when it is)."""
    if precision == "fp16" and device.type != "cuda":
        return "fp16 is benchmarked on CUDA only (CPU half-precision kernels are not a deployment target)"
    return None
