"""Accuracy against eager fp32: one judgement, :class:`Accuracy`, of one of two kinds (docs/accuracy.md)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import Any, ClassVar, Optional, Sequence

import torch
from torch.utils._pytree import tree_flatten

ELEMENTWISE = "elementwise"  # one call's outputs against eager fp32's at the same point (fp32, fp16, bf16)
INT8 = "int8"  # a quantized build's outputs against eager fp32's over the evaluation samples
TOP_K = 5


class Accuracy:
    """A judgement of a build's outputs against eager fp32's: ``kind``, ``ok`` and ``reason``."""

    kind: ClassVar[str]
    ok: bool
    reason: str

    def to_dict(self) -> dict:
        return {"kind": self.kind, **asdict(self)}


@dataclass(frozen=True)
class ElementwiseAccuracy(Accuracy):
    """How far a variant's output is from the reference, and whether that is within tolerance."""

    kind: ClassVar[str] = ELEMENTWISE
    max_abs_err: Optional[float]  # None: nothing was compared (no eager fp32 reference)
    max_rel_err: Optional[float]  # max |out - ref| / max |ref|
    top1_agree: Optional[float]  # fraction of rows whose argmax matches ([N, C] classifier outputs only)
    ok: bool
    atol: float
    rtol: float
    reason: str = ""  # why nothing was compared


@dataclass(frozen=True)
class Int8Accuracy(Accuracy):
    """How close a build's outputs are to eager fp32's over the evaluation samples, and the verdict."""

    kind: ClassVar[str] = INT8
    samples: int
    top1_agree: Optional[float]  # share of samples whose argmax matches (classifier outputs only)
    top5_overlap: Optional[float]  # mean share of the reference's top-5 classes also in the build's top 5
    cosine_min: float  # the lowest, over outputs, of the mean per-sample cosine similarity
    sqnr_db: float  # the lowest, over outputs, of 10 log10(sum ref^2 / sum (out - ref)^2)
    top1_reference: Optional[float] = None  # top-1 accuracy of eager fp32 (labelled samples only)
    top1: Optional[float] = None  # top-1 accuracy of the build (labelled samples only)
    ok: bool = True
    top1_agree_min: Optional[float] = None
    sqnr_db_min: Optional[float] = None
    reason: str = ""  # why it misses the budget

    def text(self) -> str:
        """``top-1 agreement 0.995, SQNR 31.2 dB`` (and accuracies where labelled)."""
        parts = [f"top-1 agreement {self.top1_agree:.3f}"] if self.top1_agree is not None else []
        parts.append(f"SQNR {self.sqnr_db:.1f} dB")
        if self.top1 is not None:
            parts.append(f"top-1 {self.top1:.3f} vs fp32 {self.top1_reference:.3f}")
        return ", ".join(parts)


def flatten_outputs(output: Any) -> list[torch.Tensor]:
    """All tensors of a (possibly nested) model output, detached, as float32 on the CPU."""
    leaves, _ = tree_flatten(output)
    return [leaf.detach().float().cpu() for leaf in leaves if isinstance(leaf, torch.Tensor)]


def elementwise_accuracy(output: Any, reference: Any, atol: float, rtol: float) -> ElementwiseAccuracy:
    """Every output tensor against the reference: ``max |out - ref| <= atol + rtol * max |ref|`` (docs/accuracy.md)."""
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
    top1 = float((outs[0].argmax(-1) == refs[0].argmax(-1)).float().mean()) if outs and _classifier(outs[0]) else None
    return ElementwiseAccuracy(max_abs_err=max_abs, max_rel_err=max_abs / max_ref if max_ref > 0 else max_abs,
                               top1_agree=top1, ok=ok, atol=atol, rtol=rtol)


def sqnr_db(outputs: Sequence[torch.Tensor], references: Sequence[torch.Tensor]) -> float:
    """Signal over noise of ``outputs`` against ``references``, summed over all, in dB (``-inf``: not finite)."""
    signal = noise = 0.0
    for out, ref in zip(outputs, references):
        out, ref = out.detach().double(), ref.detach().double()
        if not bool(torch.isfinite(out).all()):
            return -math.inf
        signal += float(ref.pow(2).sum())
        noise += float((out - ref).pow(2).sum())
    if noise == 0:
        return math.inf
    return 10 * math.log10(signal / noise) if signal > 0 else -math.inf


def _cosine(out: torch.Tensor, ref: torch.Tensor) -> float:
    out, ref = out.reshape(out.shape[0], -1), ref.reshape(ref.shape[0], -1)
    return float(torch.nn.functional.cosine_similarity(out, ref, dim=1, eps=1e-12).mean())


def _classifier(t: torch.Tensor) -> bool:
    return t.dim() == 2 and t.shape[-1] > 1


def int8_accuracy(outputs: Sequence[Any], references: Sequence[Any],
                  labels: Optional[torch.Tensor] = None) -> Int8Accuracy:
    """Compare a build's outputs with eager fp32's, batch by batch (``labels``: each sample's class); no verdict."""
    outs, refs = ([flatten_outputs(o) for o in each] for each in (outputs, references))
    if not outs or len(outs) != len(refs) or any(len(o) != len(r) for o, r in zip(outs, refs)):
        raise ValueError("the build's outputs and eager fp32's differ in structure")
    joined_out, joined_ref = ([torch.cat([batch[i] for batch in each]) for i in range(len(each[0]))]
                              for each in (outs, refs))
    for o, r in zip(joined_out, joined_ref):
        if o.shape != r.shape:
            raise ValueError(f"output shape {tuple(o.shape)} differs from eager fp32's {tuple(r.shape)}")
    first_out, first_ref = joined_out[0], joined_ref[0]
    top1_agree = top5 = top1_ref = top1 = None
    if _classifier(first_ref):
        top1_agree = float((first_out.argmax(-1) == first_ref.argmax(-1)).float().mean())
        k = min(TOP_K, first_ref.shape[-1])
        ours, theirs = first_out.topk(k, -1).indices, first_ref.topk(k, -1).indices
        top5 = float((ours.unsqueeze(-1) == theirs.unsqueeze(-2)).any(-1).float().sum(-1).mean() / k)
        if labels is not None:
            labels = labels.reshape(-1).to(torch.int64)
            if len(labels) == len(first_ref):
                top1_ref = float((first_ref.argmax(-1) == labels).float().mean())
                top1 = float((first_out.argmax(-1) == labels).float().mean())
    return Int8Accuracy(samples=len(first_ref), top1_agree=top1_agree, top5_overlap=top5,
                        cosine_min=min(_cosine(o, r) for o, r in zip(joined_out, joined_ref)),
                        sqnr_db=min(sqnr_db([o], [r]) for o, r in zip(joined_out, joined_ref)),
                        top1_reference=top1_ref, top1=top1)


def judge_int8(accuracy: Int8Accuracy, budget) -> Int8Accuracy:
    """``accuracy`` judged by ``budget`` (a ``top1_agree_min`` of None: the SQNR alone)."""
    misses = []
    if None not in (accuracy.top1_agree, budget.top1_agree_min) and accuracy.top1_agree < budget.top1_agree_min:
        misses.append(f"top-1 agreement {accuracy.top1_agree:.3f} < {budget.top1_agree_min}")
    if not accuracy.sqnr_db >= budget.sqnr_db_min:
        misses.append(f"SQNR {accuracy.sqnr_db:.1f} dB < {budget.sqnr_db_min} dB")
    return replace(accuracy, ok=not misses, top1_agree_min=budget.top1_agree_min, sqnr_db_min=budget.sqnr_db_min,
                   reason="; ".join(misses))


def int8_where_timed(built: dict, output: Any, reference: Any, budget) -> dict:
    """``built`` (the INT8 judgement) with its judgement where timed (``where_timed``, by the budget's SQNR alone)."""
    timed = judge_int8(int8_accuracy([output], [reference]), replace(budget, top1_agree_min=None))
    reason = timed.reason and (f"where timed: {timed.reason} (the point's inputs are seeded random ones: outside the "
                               f"range the build was calibrated on, give the input a value_range inside it)")
    return {**built, "ok": bool(built.get("ok")) and timed.ok,
            "reason": "; ".join(r for r in (built.get("reason"), reason) if r), "where_timed": timed.to_dict()}
