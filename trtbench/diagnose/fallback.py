"""fp16's and bf16's accuracy fallback: the modules with the largest own error kept in fp32, one more at a time (INT8's
loop), until eager at the precision passes or the cap is reached (docs/accuracy.md, "fp32 fallback for fp16 and bf16").
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any, Callable, Optional

import torch

from trtbench.building.copies import Fp32Fallback, Kept, Missed, cast_to_precision
from trtbench.core.precision import precision_dtype
from trtbench.diagnose import floor
from trtbench.diagnose.build import Recipe, build
from trtbench.diagnose.graph import LayerGraph, UntraceableModel
from trtbench.diagnose.taps import json_db, layer_errors, output_leaves
from trtbench.measure.accuracy import elementwise_accuracy
from trtbench.measure.kernels import KernelProof
from trtbench.quantize.fallback import AccuracyBudgetMissed, Excluding, fallback_cost, keep_in_fp32
from trtbench.variants import Built, get_variant


@dataclass(frozen=True)
class FallbackCase:
    """What the fallback judges a precision on, by point label, and the cap on modules kept in fp32."""

    inputs: dict[str, tuple]
    references: dict[str, Any]
    tolerance: Any
    cap: int


@dataclass(frozen=True)
class FloatVerdict:
    """Eager at the precision against eager fp32 at its worst point."""

    ok: bool
    point: str
    max_abs_err: Optional[float]
    max_rel_err: Optional[float]
    reason: str = ""

    def text(self) -> str:
        if self.max_abs_err is None:
            return f"at {self.point}: not compared"
        return f"max abs err {self.max_abs_err:.3g}, rel {self.max_rel_err:.3g} at {self.point}"


def _on(inputs: tuple, dtype: torch.dtype) -> tuple:
    return tuple(t.to(dtype) if isinstance(t, torch.Tensor) and t.is_floating_point() else t for t in inputs)


def _judge(case: FallbackCase, dtype: torch.dtype) -> Callable[[Any], FloatVerdict]:
    def judge(model: torch.nn.Module) -> FloatVerdict:
        worst = None
        with torch.inference_mode():
            for label, inputs in case.inputs.items():
                accuracy = elementwise_accuracy(model(*_on(inputs, dtype)), case.references[label],
                                                case.tolerance.atol, case.tolerance.rtol)
                rel = accuracy.max_rel_err if accuracy.max_rel_err is not None else -1.0
                if worst is None or not accuracy.ok or rel > (worst.max_rel_err or -1.0):
                    worst = FloatVerdict(accuracy.ok, label, accuracy.max_abs_err, accuracy.max_rel_err,
                                         "" if accuracy.ok else (accuracy.reason or "outside the tolerance"))
                if not accuracy.ok:
                    break
        return worst
    return judge


def ranked_modules(model: torch.nn.Module, precision: str, inputs: tuple, device: torch.device) -> dict[str, float]:
    """Module path -> its own SQNR (dB) in eager at ``precision`` on ``inputs`` (fp32), the largest own error first;
    only modules with an own error (not exact, input still agreeing with fp32's); empty where fx cannot trace it."""
    try:
        graph = LayerGraph(model, inputs)
    except UntraceableModel:
        return {}
    tapped = build(Recipe("eager", precision, device), graph.tapped(), inputs)
    leaves = output_leaves(tapped(*inputs))
    taps = [t.to(device) for t in leaves[len(leaves) - len(graph.tap_names()):]]
    with torch.inference_mode():
        errors = floor.ranked(layer_errors(graph, inputs, taps))
    modules = dict(model.named_modules())
    found: dict[str, float] = {}
    for error in errors:
        path = re.sub(r"#\d+$", "", error.path)
        if error.own_sqnr_db is None or error.own_sqnr_db == float("inf") or not path or path not in modules:
            continue
        found.setdefault(path, error.own_sqnr_db)
    return found


def float_fallback(model: torch.nn.Module, precision: str, case: FallbackCase, device: torch.device,
                   say: Callable[[str], None] = lambda line: None) -> Fp32Fallback:
    """What eager at ``precision`` keeps in fp32 to pass ``case`` (:class:`~trtbench.building.copies.Kept`; nothing
    where it passes as it is), or why nothing is (:class:`~trtbench.building.copies.Missed`)."""
    dtype = precision_dtype(precision)
    own: dict[str, float] = {}

    def rank() -> list[str]:
        say(f"fp32 fallback {precision}: eager at {precision} misses its tolerance; ranking modules by own error")
        own.update(ranked_modules(model, precision, next(iter(case.inputs.values())), device))
        return list(own)

    path = Excluding(lambda kept: cast_to_precision(copy.deepcopy(model), precision, device, kept),
                     _judge(case, dtype), f"eager {precision} misses its tolerance")
    try:
        found = keep_in_fp32(path, rank, case.cap, lambda line: say(f"{precision} {line}"))
    except AccuracyBudgetMissed as err:
        return Fp32Fallback(Missed(str(err), case.cap, {k: json_db(v) for k, v in list(own.items())[:case.cap]}))
    if not found.kept:
        return Fp32Fallback()
    batch = _on(next(iter(case.inputs.values())), dtype)
    return Fp32Fallback(Kept(found.kept, case.cap, found.attempts, {k: json_db(own[k]) for k in found.kept},
                             found.full.text(), found.verdict.text(),
                             fallback_cost(found.full_model, found.model, batch, precision),
                             _kernels(found.model, batch, device)))


def _kernels(model: torch.nn.Module, batch: tuple, device: torch.device) -> Optional[KernelProof]:
    """The precision ``model``'s conv and matmul kernels ran on ``batch``, as eager's runtime reports it."""
    eager, built = get_variant("eager"), Built(model)
    with torch.inference_mode():
        return eager.kernels(built, eager.prepare(built, batch), device)
