"""Input shapes and seeded example inputs for each shape point, generated once, on the device."""

from __future__ import annotations

import torch

SHAPE_LABELS = ("min", "opt", "max")
INPUT_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
           "int64": torch.int64, "int32": torch.int32, "bool": torch.bool}


def batch_shapes(input_specs, batch: int) -> list[list[int]]:
    """Every input at its opt shape with the leading dim set to ``batch`` where that dim is dynamic."""
    shapes = []
    for spec in input_specs:
        shape = list(spec.opt_shape)
        if spec.min_shape[0] != spec.max_shape[0]:
            shape[0] = batch
        shapes.append(shape)
    return shapes


def make_inputs(input_specs, shapes: list[list[int]], seed: int, device: torch.device,
                float_dtype: torch.dtype | None = None) -> tuple:
    """One tensor per input spec at ``shapes``; float inputs are cast to ``float_dtype`` when given.

    The same seed gives the same values whatever the device, so every variant and every
    precision sees the same data.
    """
    generator = torch.Generator().manual_seed(seed)
    tensors = []
    for spec, shape in zip(input_specs, shapes):
        dtype = INPUT_DTYPES[spec.dtype]
        if dtype.is_floating_point:
            if spec.value_range:
                lo, hi = spec.value_range
                t = torch.rand(shape, generator=generator) * (hi - lo) + lo
            else:
                t = torch.randn(shape, generator=generator)
            t = t.to(float_dtype or dtype)
        else:
            lo, hi = spec.value_range
            t = torch.randint(int(lo), int(hi), shape, generator=generator).to(dtype)
        tensors.append(t.to(device))
    return tuple(tensors)


def to_memory_format(inputs: tuple, channels_last: bool) -> tuple:
    """Inputs as given, or with every 4-D tensor in channels_last layout."""
    if not channels_last:
        return inputs
    return tuple(t.contiguous(memory_format=torch.channels_last) if t.dim() == 4 else t for t in inputs)


def point_inputs(config, points, device: torch.device, dtype: torch.dtype) -> dict[str, tuple]:
    """The inputs at each of ``points`` (:class:`~trtbench.config.plan.ShapePoint`), by label, in the config's
    memory format."""
    return {p.label: to_memory_format(make_inputs(config.inputs, [list(s) for s in p.shapes], config.benchmark.seed,
                                                  device, dtype), config.channels_last)
            for p in points}


def example_inputs(config, device: torch.device, dtype: torch.dtype) -> tuple:
    """The inputs at the config's opt shapes: what builds trace and export at."""
    return to_memory_format(make_inputs(config.inputs, [spec.opt_shape for spec in config.inputs],
                                        config.benchmark.seed, device, dtype), config.channels_last)
