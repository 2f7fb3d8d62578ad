"""A small CNN with a reduced-precision fault planted in one block: the study model of ``trtbench diagnose``.

``fault="bf16"``: block ``blocks.<at>`` adds 2^14 to its activations and takes it away (fp32 keeps them to 2^-9,
bf16's spacing at 2^14 is 128); ``fault="fp16"``: it scales them by 2^20 and back, past fp16's 65504, to inf. In fp32
both agree with the clean net (``fault=None``); :func:`planted_path` is the module path a diagnosis must name.
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import nn

from trtbench.core.errors import UserInputError
from trtbench.models import register_builtin

BLOCKS = 5
CHANNELS = 8
FAULTS = ("bf16", "fp16")


class Block(nn.Module):
    def __init__(self, fault: str):
        super().__init__()
        self.conv = nn.Conv2d(CHANNELS, CHANNELS, 3, padding=1)
        self.fault = fault  # "" for a clean block

    def forward(self, x):
        y = torch.relu(self.conv(x)) + x
        if self.fault == "bf16":
            y = (y + 16384.0) - 16384.0
        elif self.fault == "fp16":
            y = (y * 1048576.0) / 1048576.0
        return y


class PlantedNet(nn.Module):
    def __init__(self, fault: str, at: int, num_classes: int):
        super().__init__()
        self.stem = nn.Conv2d(3, CHANNELS, 1)
        self.blocks = nn.Sequential(*[Block(fault if i == at else "") for i in range(BLOCKS)])
        self.head = nn.Linear(CHANNELS, num_classes)

    def forward(self, x):
        return self.head(self.blocks(self.stem(x)).mean((2, 3)))


@register_builtin("planted_net")
def planted_net(fault: Optional[str] = None, at: int = 2, num_classes: int = 10) -> PlantedNet:
    """The net with ``fault`` (``bf16``, ``fp16`` or None) planted in block ``at``; seeded weights, eval mode."""
    if fault is not None and fault not in FAULTS:
        raise UserInputError("model.kwargs.fault", f"unknown fault {fault!r}",
                             f"use {' or '.join(FAULTS)}, or leave it out")
    if not 0 <= at < BLOCKS:
        raise UserInputError("model.kwargs.at", f"no block {at}", f"use a block index from 0 to {BLOCKS - 1}")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        return PlantedNet(fault or "", at, num_classes).eval()


def planted_path(at: int) -> str:
    """The module path of the planted block (the module whose own ops add and remove the fault)."""
    return f"blocks.{at}"
