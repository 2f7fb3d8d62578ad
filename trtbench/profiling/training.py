"""Training-step timing: forward + backward (+ optimizer step) on a copy of a variant's module."""

from __future__ import annotations

import copy
import io
from typing import Any

import torch
import torch.nn.functional as F
from torch.utils._pytree import tree_flatten

from trtbench.profiling import NotSupported
from trtbench.core.stats import summarize
from trtbench.measure.timing import TimingSettings, measure_interleaved

OPTIMIZERS = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam}


def _loss(output: Any, targets: dict) -> tuple[torch.Tensor, str]:
    """Cross-entropy against seeded random classes for ``[N, C]`` logits, else the mean of all outputs."""
    tensors = [t for t in tree_flatten(output)[0] if isinstance(t, torch.Tensor) and t.is_floating_point()]
    if not tensors:
        raise NotSupported("the model returns no floating-point tensor to take a loss of")
    first = tensors[0]
    if first.dim() == 2 and first.shape[1] > 1:
        key = tuple(first.shape)
        if key not in targets:
            generator = torch.Generator().manual_seed(0)
            targets[key] = torch.randint(first.shape[1], (first.shape[0],), generator=generator).to(first.device)
        return F.cross_entropy(first.float(), targets[key]), "cross_entropy"
    return sum(t.float().mean() for t in tensors), "mean"


def _trainable_copy(module: torch.nn.Module, device: torch.device) -> torch.nn.Module:
    """An independent copy whose parameters are leaves (deepcopy of a ScriptModule yields non-leaf clones)."""
    if isinstance(module, torch.jit.ScriptModule):
        buffer = io.BytesIO()
        torch.jit.save(module, buffer)
        buffer.seek(0)
        return torch.jit.load(buffer, map_location=device)
    return copy.deepcopy(module)


def profile_training(module: Any, inputs: tuple, device: torch.device, timing: TimingSettings,
                     optimizer: str = "sgd", lr: float = 0.01) -> dict:
    """Time the training forward pass and the whole step on a copy in train mode."""
    if not isinstance(module, torch.nn.Module):
        raise NotSupported(f"the built variant is a {type(module).__name__}, not an nn.Module")
    if not any(p.requires_grad for p in module.parameters()):
        raise NotSupported("the module has no parameters that require grad (e.g. TensorRT engines embed their weights)")
    model = _trainable_copy(module, device).train()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = OPTIMIZERS[optimizer](params, lr=lr) if optimizer in OPTIMIZERS else None
    targets: dict = {}

    def forward() -> torch.Tensor:
        return _loss(model(*inputs), targets)[0]

    def step() -> None:
        model.zero_grad(set_to_none=True)
        forward().backward()
        if opt is not None:
            opt.step()

    with torch.enable_grad():
        loss_kind = _loss(model(*inputs), targets)[1]
        timed = measure_interleaved({"forward": forward, "step": step}, device, timing)
    fwd_stats, step_stats = summarize(timed["forward"].samples), summarize(timed["step"].samples)
    result = {
        "optimizer": optimizer,
        "loss": loss_kind,
        "forward_ms": fwd_stats.to_dict(),
        "step_ms": step_stats.to_dict(),
        "backward_and_step_share": max(0.0, 1.0 - fwd_stats.median / step_stats.median),
        "step_samples_ms": timed["step"].samples,
    }
    if isinstance(module, torch.jit.TracedModule):
        result["note"] = ("torch.jit.trace fixed mode-dependent layers (BatchNorm, Dropout) in the mode the model "
                          "was traced in (eval): this step runs them in inference mode")
    return result
