"""The one way the harness gets a build: variant V at precision P from a (possibly partial) model, through
:func:`trtbench.building.stage.build_variants`; fully quantized, with no budget, at INT8 (docs/accuracy.md)."""

from __future__ import annotations

import copy
import dataclasses
import math
import tempfile
from dataclasses import dataclass
from typing import Any, Optional

import torch

from trtbench.building.stage import BuildList, build_variants
from trtbench.core.inputs import InputConfig
from trtbench.core.outdir import FailureLog
from trtbench.core.precision import is_quantized, precision_dtype
from trtbench.core.target import Target
from trtbench.measure.kernels import KernelProof
from trtbench.variants import Built, BuildContext, Variant, build_order, get_variant


class PathUnavailable(Exception):
    """A variant cannot be built at a precision here (its reason, as a row's skip or failure reads)."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(reason)


@dataclass(frozen=True)
class Recipe:
    """How every build of one diagnosis is made (``int8``: the :class:`~trtbench.quantize.setup.Int8Setup` where
    the precision quantizes)."""

    variant: str
    precision: str
    device: torch.device
    options: Any = None
    int8: Any = None
    failures_dir: Optional[str] = None


class _NoBudget:
    """An INT8 budget every build keeps, so the variant's quantizer returns full INT8."""

    top1_agree_min = None
    sqnr_db_min = -math.inf


def unavailable(recipe: Recipe) -> Optional[str]:
    """Why ``recipe``'s variant cannot run at its precision here, or None."""
    variant = get_variant(recipe.variant)
    if is_quantized(recipe.precision) and not variant.quantizes:
        return f"{variant.name} has no {recipe.precision} path"
    if is_quantized(recipe.precision) and recipe.int8 is None:
        return f"{recipe.precision} needs calibration samples (the config's calibration: section)"
    return variant.unavailable_reason(Target(recipe.device, recipe.precision))


@dataclass(frozen=True)
class Build:
    """A variant's build at a precision: called with fp32 inputs, it returns the variant's outputs."""

    variant: Variant
    built: Built
    device: torch.device
    dtype: torch.dtype

    def _prepared(self, inputs: tuple):
        return self.variant.prepare(self.built, tuple(_cast(t, self.device, self.dtype) for t in inputs))

    def __call__(self, *inputs):
        with torch.inference_mode():
            return self.variant.run(self.built, self._prepared(inputs))

    def kernels(self, *inputs) -> Optional[KernelProof]:
        """The precision its conv and matmul kernels ran on ``inputs``, as its runtime says (None: it cannot)."""
        with torch.inference_mode():
            return self.variant.kernels(self.built, self._prepared(inputs), self.device)


def build(recipe: Recipe, module: torch.nn.Module, example: tuple) -> Build:
    """``module`` (fp32, eval) built as ``recipe``'s variant at its precision; :class:`PathUnavailable` where not."""
    reason = unavailable(recipe)
    if reason:
        raise PathUnavailable(reason)
    hinted = recipe.precision in get_variant(recipe.variant).hints
    dtype = torch.float32 if hinted else precision_dtype(recipe.precision)
    cast = copy.deepcopy(module).to(recipe.device, dtype).eval()
    inputs = tuple(_cast(t, recipe.device, dtype) for t in example)
    specs = _specs(inputs, recipe.int8 if is_quantized(recipe.precision) else None)
    ctx = BuildContext(recipe.device, recipe.precision, dtype, inputs, {"opt": inputs}, specs,
                       int8=_full_int8(recipe.int8, module) if is_quantized(recipe.precision) else None)
    names = build_order([recipe.variant])
    options = {recipe.variant: recipe.options} if recipe.options is not None else {}
    with tempfile.TemporaryDirectory(prefix="trtbench-diagnose-") as scratch:
        outcomes = build_variants(BuildList(names, options), cast, ctx, FailureLog(recipe.failures_dir or scratch))
    outcome = outcomes[recipe.variant]
    if outcome.built is None:
        raise PathUnavailable(f"{outcome.status}: {outcome.reason}")
    return Build(outcome.variant, outcome.built, recipe.device, dtype)


def _specs(inputs: tuple, int8) -> list[InputConfig]:
    """Static input specs at the example's shapes; at a quantized precision the batch dim spans the calibration and
    evaluation batches too (the quantizer runs them through the build)."""
    largest = max((len(batch[0]) for batches in (int8.data.calibration, int8.data.evaluation) for batch in batches),
                  default=0) if int8 is not None else 0
    return [InputConfig(name=f"input{i}", min_shape=[1, *shape[1:]] if shape and largest else shape, opt_shape=shape,
                        max_shape=[max(shape[0], largest), *shape[1:]] if shape and largest else shape)
            for i, shape in enumerate(list(t.shape) for t in inputs)]


def _cast(t, device: torch.device, dtype: torch.dtype):
    if isinstance(t, torch.Tensor) and t.is_floating_point():
        return t.to(device, dtype)
    return t.to(device) if isinstance(t, torch.Tensor) else t


def _full_int8(setup, module: torch.nn.Module):
    """``setup`` judged against ``module``'s own fp32 outputs (a prefix's are not the model's) with no budget."""
    with torch.inference_mode():
        references = [module(*batch) for batch in setup.data.evaluation]
    return dataclasses.replace(setup, budget=_NoBudget(), references=references)
