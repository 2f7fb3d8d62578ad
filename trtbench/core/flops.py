"""FLOPs of one forward pass of the eager model, counted by ``FlopCounterMode`` (a multiply-add is 2 FLOPs)."""

from __future__ import annotations

import torch
from torch.utils.flop_counter import FlopCounterMode


def forward_flops(model: torch.nn.Module, inputs: tuple) -> int:
    """FLOPs of ``model(*inputs)`` (one forward pass, no gradients)."""
    with torch.inference_mode(), FlopCounterMode(display=False) as counter:
        model(*inputs)
    return counter.get_total_flops()

