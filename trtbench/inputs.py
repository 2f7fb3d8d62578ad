"""Seeded example inputs for each shape point (min/opt/max), generated once, on the device."""

from __future__ import annotations

import torch

_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
           "int64": torch.int64, "int32": torch.int32, "bool": torch.bool}


def shape_points(input_specs, labels: list[str]) -> dict[str, list[list[int]]]:
    """Label -> concrete shape of every input; labels whose shapes repeat an earlier label are dropped.

    Static inputs have one shape point, labelled ``opt``.
    """
    if not any(spec.is_dynamic for spec in input_specs):
        return {"opt": [spec.opt_shape for spec in input_specs]}
    points: dict[str, list[list[int]]] = {}
    for label in labels:
        shapes = [spec.shape_for(label) for spec in input_specs]
        if shapes not in points.values():
            points[label] = shapes
    return points


def format_shapes(shapes: list[list[int]]) -> str:
    """``[[2, 3, 224, 224]]`` -> ``2x3x224x224`` (inputs joined by ``,``)."""
    return ",".join("x".join(str(d) for d in shape) for shape in shapes)


def make_inputs(input_specs, shapes: list[list[int]], seed: int, device: torch.device,
                float_dtype: torch.dtype | None = None) -> tuple:
    """One tensor per input spec at ``shapes``; float inputs are cast to ``float_dtype`` when given.

    The same seed gives the same values whatever the device, so every variant and every
    precision sees the same data.
    """
    generator = torch.Generator().manual_seed(seed)
    tensors = []
    for spec, shape in zip(input_specs, shapes):
        dtype = _DTYPES[spec.dtype]
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
