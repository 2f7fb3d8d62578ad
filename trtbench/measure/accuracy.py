"""Accuracy of a reduced-precision build against eager fp32, over evaluation samples.

Element-wise parity (:mod:`trtbench.measure.parity`) is the wrong judge for INT8: quantization moves every
value a little by design. What matters is whether the task's answer holds, so this module reports,
over the evaluation samples: top-1 agreement and top-5 overlap with eager fp32 for classifier-shaped
outputs (``[N, C]``), the cosine similarity and the SQNR (signal-to-quantization-noise ratio, dB) of
every output, and, when the samples have labels, the top-1 accuracy of both. A build passes when it
keeps the budget (``tolerances.int8``: ``top1_agree_min``, ``sqnr_db_min``).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import Any, Optional, Sequence

import torch

from trtbench.measure.parity import flatten_outputs

TOP_K = 5


@dataclass(frozen=True)
class Accuracy:
    """How close a build's outputs are to eager fp32's over the evaluation samples, and the verdict."""

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

    def to_dict(self) -> dict:
        return {"kind": "int8", **asdict(self)}

    def text(self) -> str:
        """``top-1 agreement 0.995, SQNR 31.2 dB`` (and accuracies where labelled)."""
        parts = []
        if self.top1_agree is not None:
            parts.append(f"top-1 agreement {self.top1_agree:.3f}")
        parts.append(f"SQNR {self.sqnr_db:.1f} dB")
        if self.top1 is not None:
            parts.append(f"top-1 {self.top1:.3f} vs fp32 {self.top1_reference:.3f}")
        return ", ".join(parts)


def _sqnr_db(out: torch.Tensor, ref: torch.Tensor) -> float:
    noise = float(((out - ref) ** 2).sum())
    signal = float((ref ** 2).sum())
    if noise == 0:
        return math.inf
    return 10 * math.log10(signal / noise) if signal > 0 else -math.inf


def _cosine(out: torch.Tensor, ref: torch.Tensor) -> float:
    out, ref = out.reshape(out.shape[0], -1), ref.reshape(ref.shape[0], -1)
    return float(torch.nn.functional.cosine_similarity(out, ref, dim=1, eps=1e-12).mean())


def _classifier(t: torch.Tensor) -> bool:
    return t.dim() == 2 and t.shape[-1] > 1


def compare(outputs: Sequence[Any], references: Sequence[Any], labels: Optional[torch.Tensor] = None) -> Accuracy:
    """Compare a build's outputs with eager fp32's, batch by batch (each a model output pytree);
    ``labels``: the class of every evaluation sample, in order, when known. No verdict yet (:func:`judge`)."""
    outs = [flatten_outputs(o) for o in outputs]
    refs = [flatten_outputs(r) for r in references]
    if not outs or len(outs) != len(refs) or any(len(o) != len(r) for o, r in zip(outs, refs)):
        raise ValueError("the build's outputs and eager fp32's differ in structure")
    joined_out = [torch.cat([batch[i] for batch in outs]) for i in range(len(outs[0]))]
    joined_ref = [torch.cat([batch[i] for batch in refs]) for i in range(len(refs[0]))]
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
    return Accuracy(samples=len(first_ref), top1_agree=top1_agree, top5_overlap=top5,
                    cosine_min=min(_cosine(o, r) for o, r in zip(joined_out, joined_ref)),
                    sqnr_db=min(_sqnr_db(o, r) for o, r in zip(joined_out, joined_ref)),
                    top1_reference=top1_ref, top1=top1)


def judge(accuracy: Accuracy, budget) -> Accuracy:
    """``accuracy`` with its verdict against ``budget`` (``top1_agree_min``, ``sqnr_db_min``)."""
    misses = []
    if accuracy.top1_agree is not None and accuracy.top1_agree < budget.top1_agree_min:
        misses.append(f"top-1 agreement {accuracy.top1_agree:.3f} < {budget.top1_agree_min}")
    if not accuracy.sqnr_db >= budget.sqnr_db_min:
        misses.append(f"SQNR {accuracy.sqnr_db:.1f} dB < {budget.sqnr_db_min} dB")
    return replace(accuracy, ok=not misses, top1_agree_min=budget.top1_agree_min, sqnr_db_min=budget.sqnr_db_min,
                   reason="; ".join(misses))
