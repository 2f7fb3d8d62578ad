"""Precisions a variant can be built and benchmarked at (docs/measuring.md, "Reduced precision")."""

from __future__ import annotations

import torch

PRECISIONS: dict[str, torch.dtype] = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16,
                                      "int8": torch.float32}
REFERENCE = "fp32"  # every speedup and accuracy figure is against eager at this precision
DECODER_PRECISIONS = ("fp32", "fp16", "bf16", "int8", "int4")  # a decoder's: floats, and weight-only int8/int4
QUANTIZED = ("int8",)  # precisions a variant reaches by quantizing its build (inputs and parameters stay fp32)


def precision_dtype(name: str) -> torch.dtype:
    """The floating dtype that parameters and float inputs take at precision ``name``."""
    return PRECISIONS[name]


def dtype_name(dtype: torch.dtype) -> str:
    """``float32`` for ``torch.float32``."""
    return str(dtype).removeprefix("torch.")


def is_quantized(name: str) -> bool:
    return name in QUANTIZED


def compute_dtype(name: str) -> torch.dtype:
    """The dtype a build at ``name`` computes in: int8 where quantized, else its floating dtype."""
    return torch.int8 if is_quantized(name) else precision_dtype(name)


def float_precision(name: str) -> str:
    """The float precision of a build at ``name``: itself, or fp32 where quantized."""
    return REFERENCE if is_quantized(name) else name


def unsupported_reason(precision: str, device: torch.device) -> str | None:
    """Why ``precision`` is not benchmarked on ``device`` (None when it is)."""
    if precision == "fp16" and device.type != "cuda":
        return "fp16 is benchmarked on CUDA only (CPU half-precision kernels are not a deployment target)"
    return None
