"""Accuracy check of a variant's output against the eager fp32 reference."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Optional

import torch
from torch.utils._pytree import tree_flatten


@dataclass(frozen=True)
class Parity:
    """How far a variant's output is from the reference, and whether that is within tolerance."""

    max_abs_err: float
    max_rel_err: float  # max |out - ref| / max |ref|
    top1_agree: Optional[float]  # fraction of rows whose argmax matches ([N, C] classifier outputs only)
    ok: bool
    atol: float
    rtol: float

    def to_dict(self) -> dict:
        return asdict(self)


def flatten_outputs(output: Any) -> list[torch.Tensor]:
    """All tensors of a (possibly nested) model output, detached, as float32 on the CPU."""
    leaves, _ = tree_flatten(output)
    return [leaf.detach().float().cpu() for leaf in leaves if isinstance(leaf, torch.Tensor)]


def check_parity(output: Any, reference: Any, atol: float, rtol: float) -> Parity:
    """Compare every output tensor with the reference, relative to the reference's scale.

    A tensor passes when ``max |out - ref| <= atol + rtol * max |ref|`` and its non-finite
    values (NaN, inf) sit where the reference has them. The bound is scale-relative, not
    element-wise: an element-wise rtol fails on every near-zero logit, which TF32 or fp16
    rounding moves by a tiny amount of the output's scale.
    """
    outs, refs = flatten_outputs(output), flatten_outputs(reference)
    if len(outs) != len(refs) or any(o.shape != r.shape for o, r in zip(outs, refs)):
        shapes = ([tuple(o.shape) for o in outs], [tuple(r.shape) for r in refs])
        raise ValueError(f"output structure differs from eager: {shapes[0]} vs {shapes[1]}")
    max_abs, max_ref, ok = 0.0, 0.0, True
    for out, ref in zip(outs, refs):
        if out.numel() == 0:
            continue
        finite_ref = torch.isfinite(ref)
        if not torch.equal(torch.isfinite(out), finite_ref):
            ok = False
        both = finite_ref & torch.isfinite(out)
        diff = (out - ref).abs()[both]
        tensor_err = float(diff.max()) if diff.numel() else (0.0 if ok else float("inf"))
        tensor_scale = float(ref.abs()[finite_ref].max()) if finite_ref.any() else 0.0
        ok = ok and tensor_err <= atol + rtol * tensor_scale
        max_abs, max_ref = max(max_abs, tensor_err), max(max_ref, tensor_scale)
    top1 = None
    if outs and outs[0].dim() == 2 and outs[0].shape[-1] > 1:  # classifier logits [N, C]
        top1 = float((outs[0].argmax(-1) == refs[0].argmax(-1)).float().mean())
    return Parity(max_abs_err=max_abs, max_rel_err=max_abs / max_ref if max_ref > 0 else max_abs,
                  top1_agree=top1, ok=ok, atol=atol, rtol=rtol)
