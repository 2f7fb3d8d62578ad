"""FLOPs of one forward pass, counted by ``torch.utils.flop_counter.FlopCounterMode`` on the eager model.

The counter adds up the floating-point operations of the ops it has formulas for (matmuls,
convolutions, attention, their batched forms): one multiply-add counts as 2 FLOPs.
Elementwise ops, normalisation and pooling are not counted; in conv and matmul networks
they are a small share. The count is a property of the model and input shape, not of a
variant: FLOPs / latency is any variant's achieved FLOP/s at that shape.
"""

from __future__ import annotations

import torch
from torch.utils.flop_counter import FlopCounterMode


def forward_flops(model: torch.nn.Module, inputs: tuple) -> int:
    """FLOPs of ``model(*inputs)`` (one forward pass, no gradients)."""
    with torch.inference_mode(), FlopCounterMode(display=False) as counter:
        model(*inputs)
    return counter.get_total_flops()

