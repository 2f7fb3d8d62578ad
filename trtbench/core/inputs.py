"""A model input's spec (the config's ``inputs``), its shapes and seeded example inputs at each shape point."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch

from trtbench.core import schema
from trtbench.core.errors import UserInputError

SHAPE_LABELS = ("min", "opt", "max")
INPUT_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
           "int64": torch.int64, "int32": torch.int32, "bool": torch.bool}


@dataclass
class InputConfig:
    """One model input: a static ``shape`` or dynamic ``min_shape``/``opt_shape``/``max_shape``."""

    name: str = "input"
    dtype: str = "float32"
    shape: Optional[list[int]] = None
    min_shape: Optional[list[int]] = None
    opt_shape: Optional[list[int]] = None
    max_shape: Optional[list[int]] = None
    value_range: Optional[list[float]] = None

    @staticmethod
    def prepare(fields: dict, path: str) -> dict:
        """A static ``shape`` is the min, opt and max shape; else all three must be given."""
        dynamic = {key: fields.get(key) for key in ("min_shape", "opt_shape", "max_shape")}
        if fields.get("shape") is not None:
            if any(s is not None for s in dynamic.values()):
                raise UserInputError(path, "has both 'shape' and min/opt/max shapes",
                                     "give either 'shape' (static) or all of min_shape, opt_shape, max_shape (dynamic)")
            return {**fields, **{key: list(fields["shape"]) for key in dynamic}}
        missing = [key for key, s in dynamic.items() if s is None]
        if missing:
            raise UserInputError(path, f"missing {', '.join(missing)}",
                                 "give either 'shape' (static) or all of min_shape, opt_shape, max_shape (dynamic)")
        return fields

    def validate(self, path: str) -> None:
        schema.require_choice(self.dtype, tuple(INPUT_DTYPES), schema.join(path, "dtype"))
        for label in SHAPE_LABELS:
            shape = self.shape_for(label)
            key = schema.join(path, "shape" if self.shape is not None else f"{label}_shape")
            if not shape:
                raise UserInputError(key, "is empty", "list one size per dimension, e.g. [1, 3, 224, 224]")
            for dim, size in enumerate(shape):
                if size <= 0:
                    raise UserInputError(key, f"dim {dim} is {size}", "every dimension must be a positive integer")
        ranks = {len(self.shape_for(label)) for label in SHAPE_LABELS}
        if len(ranks) != 1:
            raise UserInputError(path, "min_shape, opt_shape and max_shape have different ranks",
                                 "give the same number of dimensions in all three")
        for dim, (lo, opt, hi) in enumerate(zip(self.min_shape, self.opt_shape, self.max_shape)):
            if not lo <= opt <= hi:
                raise UserInputError(schema.join(path, "opt_shape"),
                                     f"dim {dim} violates min <= opt <= max ({lo} <= {opt} <= {hi})",
                                     f"choose sizes so that min_shape[{dim}] <= opt_shape[{dim}] <= max_shape[{dim}]")
        if self.value_range is not None:
            if len(self.value_range) != 2 or self.value_range[0] >= self.value_range[1]:
                raise UserInputError(schema.join(path, "value_range"), f"got {self.value_range}",
                                     "give [low, high] with low < high")
        elif not self.dtype.startswith(("float", "bfloat")):
            raise UserInputError(schema.join(path, "value_range"), f"is required for dtype {self.dtype}",
                                 "give [low, high) for integer inputs, e.g. [0, 1000] for token ids")

    @property
    def is_dynamic(self) -> bool:
        return not (self.min_shape == self.opt_shape == self.max_shape)

    def shape_for(self, label: str) -> list[int]:
        """The concrete shape at ``label`` (min, opt or max)."""
        return {"min": self.min_shape, "opt": self.opt_shape, "max": self.max_shape}[label]


def batch_shapes(input_specs, batch: int) -> list[list[int]]:
    """Every input at its opt shape with the leading dim set to ``batch`` where that dim is dynamic."""
    return [[batch, *spec.opt_shape[1:]] if spec.min_shape[0] != spec.max_shape[0] else list(spec.opt_shape)
            for spec in input_specs]


def make_inputs(input_specs, shapes: list[list[int]], seed: int, device: torch.device,
                float_dtype: torch.dtype | None = None) -> tuple:
    """One tensor per input spec at ``shapes``, seeded, the same on any device (floats cast to ``float_dtype``)."""
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
    """The inputs at each of ``points``, by label, in the config's memory format."""
    return {p.label: to_memory_format(make_inputs(config.inputs, [list(s) for s in p.shapes], config.benchmark.seed,
                                                  device, dtype), config.channels_last)
            for p in points}


def example_inputs(config, device: torch.device, dtype: torch.dtype) -> tuple:
    """The inputs at the config's opt shapes: what builds trace and export at."""
    return to_memory_format(make_inputs(config.inputs, [spec.opt_shape for spec in config.inputs],
                                        config.benchmark.seed, device, dtype), config.channels_last)
