"""A build group's copy of the model and inputs at each precision's compute dtype (int8 shares fp32's);
:func:`cast_to_precision`, the one step that makes a precision's model, here and in a timing worker's rebuild."""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass, field
from typing import Optional, Sequence, Union

import torch

from trtbench.core.codec import Coded, key
from trtbench.core.inputs import example_inputs, point_inputs
from trtbench.core.precision import precision_dtype
from trtbench.measure.kernels import KernelProof
from trtbench.quantize.fallback import FallbackCost


@dataclass(frozen=True)
class Kept(Coded):
    """The fallback passed with ``modules`` in fp32: their own SQNR (dB, as JSON keeps it), the builds run under the
    cap, the full build's figures and the kept one's, the cost, and the kept build's kernels (None: unread)."""

    modules: tuple[str, ...] = field(metadata=key("fp32_modules"))
    cap: int
    builds: int
    own_sqnr_db: dict
    full_accuracy: str
    accuracy: str
    cost: FallbackCost = field(metadata=key("fallback_cost"))
    kernels: Optional[KernelProof] = None


@dataclass(frozen=True)
class Missed:
    """The fallback kept nothing: why (the cap was not enough, or it failed), and where it ranked the modules, the
    cap and the first ranked modules' own SQNR (dB, as JSON keeps it)."""

    reason: str
    cap: Optional[int] = None
    own_sqnr_db: Optional[dict] = None

    def to_dict(self) -> dict:
        ranked = {} if self.cap is None else {"cap": self.cap, "own_sqnr_db": self.own_sqnr_db}
        return {"fp32_modules": [], "missed": self.reason, **ranked}


@dataclass(frozen=True)
class Fp32Fallback:
    """What fp16's or bf16's accuracy fallback found at one precision, which each row built from the copy reports
    (``fp32_fallback`` in its build info; None where it did not run or the precision passed as it is)."""

    outcome: Optional[Union[Kept, Missed]] = None

    @property
    def modules(self) -> tuple[str, ...]:
        return self.outcome.modules if isinstance(self.outcome, Kept) else ()


@dataclass(frozen=True)
class PrecisionCopy:
    """The model and inputs at one compute dtype."""

    dtype: torch.dtype
    model: torch.nn.Module  # cast to ``dtype`` on the run's device (channels_last when configured)
    example: tuple  # inputs at the config's opt shapes: builds trace/export there
    inputs: dict[str, tuple]  # point label -> that point's inputs
    fallback: Fp32Fallback = Fp32Fallback()  # the modules kept in fp32 by the accuracy fallback


def _floats_to(value, dtype: torch.dtype):
    """``value`` (a tensor, or a tuple or list of them) with its floating-point tensors cast to ``dtype``."""
    if isinstance(value, torch.Tensor):
        return value.to(dtype) if value.is_floating_point() else value
    if isinstance(value, (tuple, list)):
        return type(value)(_floats_to(v, dtype) for v in value)
    return value


def _inputs_to(dtype: torch.dtype, module: torch.nn.Module, args: tuple):
    return _floats_to(args, dtype)


def _outputs_to(dtype: torch.dtype, module: torch.nn.Module, args: tuple, output):
    return _floats_to(output, dtype)


def keep_fp32(model: torch.nn.Module, paths: Sequence[str], dtype: torch.dtype) -> torch.nn.Module:
    """``model`` (at ``dtype``) with each module of ``paths`` back in fp32, its inputs cast to fp32 as they enter
    and its outputs to ``dtype`` as they leave (forward hooks, which tracing and export inline)."""
    for path in paths:
        module = model.get_submodule(path)
        module.float()
        module.register_forward_pre_hook(functools.partial(_inputs_to, torch.float32))
        module.register_forward_hook(functools.partial(_outputs_to, dtype))
    return model


def cast_to_precision(model: torch.nn.Module, precision: str, device: torch.device, fp32_modules: Sequence[str] = (),
                      *, channels_last: bool = False) -> torch.nn.Module:
    """``model`` cast in place to ``precision``'s dtype on ``device`` (channels_last when asked), the modules of
    ``fp32_modules`` kept in fp32 (:func:`keep_fp32`): what a build at ``precision`` starts from."""
    dtype = precision_dtype(precision)
    model = keep_fp32(model.to(device, dtype), fp32_modules if dtype != torch.float32 else (), dtype)
    return model.to(memory_format=torch.channels_last) if channels_last else model


def precision_copies(model: torch.nn.Module, precisions: list[str], config, points, device: torch.device,
                     fallbacks: dict[str, Fp32Fallback] | None = None) -> dict[str, PrecisionCopy]:
    """precision -> its :class:`PrecisionCopy`, with the modules its accuracy fallback keeps in fp32 (``fallbacks``,
    by precision); precisions of one dtype share one (the same object)."""
    by_dtype: dict[torch.dtype, PrecisionCopy] = {}
    for precision in precisions:
        dtype = precision_dtype(precision)
        if dtype in by_dtype:
            continue
        fallback = (fallbacks or {}).get(precision, Fp32Fallback())
        cast = cast_to_precision(copy.deepcopy(model), precision, device, fallback.modules,
                                 channels_last=config.channels_last)
        by_dtype[dtype] = PrecisionCopy(dtype, cast, example_inputs(config, device, dtype),
                                        point_inputs(config, points, device, dtype), fallback)
    return {precision: by_dtype[precision_dtype(precision)] for precision in precisions}
