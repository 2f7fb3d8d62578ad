"""A toy model whose call sleeps SLEEPER_MS milliseconds (an environment variable, default 10): the same model, by
its hash, whatever the sleep, so a change of SLEEPER_MS between runs is a step in one series
(benchmarks/history_step.py)."""

from __future__ import annotations

import os
import time

import torch
from torch import nn


class Sleeper(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.ones(1))
        self.seconds = float(os.environ.get("SLEEPER_MS", "10")) / 1e3

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        time.sleep(self.seconds)
        return x * self.scale


def sleeper() -> nn.Module:
    return Sleeper()
