"""What a build group's variants at one precision build from and are timed on: a copy of the model
and inputs at the precision's compute dtype.

A build group holds every precision of a run (eager fp32 first, the reference of every reduced
precision's rows, timed in the same rounds), so its precisions may differ in dtype: fp16 builds
from a half copy of the model and runs on half inputs (bf16 from a bfloat16 one), while int8 shares fp32's
copy (a quantized build keeps fp32 inputs and parameters, and reuses what fp32 built, like ``exported``).
:func:`cast_to_precision` is the one step that makes a precision's model, here and in a timing worker's rebuild.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch

from trtbench.core.inputs import example_inputs, point_inputs
from trtbench.core.precision import precision_dtype


@dataclass(frozen=True)
class PrecisionCopy:
    """The model and inputs at one compute dtype."""

    dtype: torch.dtype
    model: torch.nn.Module  # cast to ``dtype`` on the run's device (channels_last when configured)
    example: tuple  # inputs at the config's opt shapes: builds trace/export there
    inputs: dict[str, tuple]  # point label -> that point's inputs


def cast_to_precision(model: torch.nn.Module, precision: str, device: torch.device,
                      channels_last: bool) -> torch.nn.Module:
    """``model``, cast in place to ``precision``'s dtype (parameters and buffers) on ``device``, in channels_last
    memory format when asked: what a build at ``precision`` starts from."""
    model = model.to(device, precision_dtype(precision))
    return model.to(memory_format=torch.channels_last) if channels_last else model


def precision_copies(model: torch.nn.Module, precisions: list[str], config, points,
                     device: torch.device) -> dict[str, PrecisionCopy]:
    """precision -> its :class:`PrecisionCopy`; precisions of one dtype share one (the same object)."""
    by_dtype: dict[torch.dtype, PrecisionCopy] = {}
    for precision in precisions:
        dtype = precision_dtype(precision)
        if dtype in by_dtype:
            continue
        cast = cast_to_precision(copy.deepcopy(model), precision, device, config.channels_last)
        by_dtype[dtype] = PrecisionCopy(dtype, cast, example_inputs(config, device, dtype),
                                        point_inputs(config, points, device, dtype))
    return {precision: by_dtype[precision_dtype(precision)] for precision in precisions}
