"""Small CNNs with a planted reduced-precision fault inside one block, for the diagnose harness's tests.

``planted_net("bf16", at)``: block ``blocks.<at>`` adds a large offset to its activations and takes it away again,
exact in fp32 and fp16 but ruinous in bf16, whose 8-bit significand at 2^14 has a spacing of 128: every activation
rounds to the offset. ``planted_net("fp16", at)``: the block scales its activations by 2^20 and back, exact in fp32
and bf16, but past fp16's largest value (65504), so they overflow to inf. Both are identical to the clean net in
fp32; ``planted_path(at)`` is the module path the harness must name.
"""

from __future__ import annotations

import torch
from torch import nn

BLOCKS = 5
CHANNELS = 8


class Block(nn.Module):
    def __init__(self, fault: str | None):
        super().__init__()
        self.conv = nn.Conv2d(CHANNELS, CHANNELS, 3, padding=1)
        self.fault = fault

    def forward(self, x):
        y = torch.relu(self.conv(x)) + x
        if self.fault == "bf16":
            y = (y + 16384.0) - 16384.0
        elif self.fault == "fp16":
            y = (y * 1048576.0) / 1048576.0
        return y


class PlantedNet(nn.Module):
    def __init__(self, fault: str | None, at: int):
        super().__init__()
        self.stem = nn.Conv2d(3, CHANNELS, 1)
        self.blocks = nn.Sequential(*[Block(fault if i == at else None) for i in range(BLOCKS)])
        self.head = nn.Linear(CHANNELS, 10)

    def forward(self, x):
        return self.head(self.blocks(self.stem(x)).mean((2, 3)))


def planted_net(fault: str | None, at: int) -> PlantedNet:
    """The net with ``fault`` (``bf16``, ``fp16`` or None) planted in block ``at``; seeded weights, eval mode."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        return PlantedNet(fault, at).eval()


def planted_path(at: int) -> str:
    """The module path of the planted block's fault (the module whose own ops add and remove it)."""
    return f"blocks.{at}"


def planted_inputs(batch: int = 2) -> tuple[torch.Tensor]:
    return (torch.rand(batch, 3, 8, 8, generator=torch.Generator().manual_seed(1)) * 4,)


def planted_config(tmp_path, fault: str, at: int) -> dict:
    """A config of :func:`planted_net` on the CPU (eager at fp32 and ``fault``), its output under ``tmp_path``."""
    return {"name": "planted", "device": "cpu",
            "model": {"source": "python", "name": "helpers.planted:planted_net", "kwargs": {"fault": fault, "at": at}},
            "inputs": [{"name": "input", "shape": [2, 3, 8, 8], "value_range": [0, 4]}],
            "variants": ["eager"], "precisions": ["fp32", fault], "output": {"dir": str(tmp_path / "out")}}
