"""The ResNet34 of the Torch-TensorRT reference study (study 004), built from a per-layer argument dict: each conv's
``BN(ReLU(conv(x)))`` with a bias, a conv-projected shortcut, a ``Linear(4608, 1000)`` head (224x224 inputs only) (more:
docs/backends.md, "Module notes", trtbench/models/seed_resnet34.py)."""

from __future__ import annotations

import copy

import torch
from torch import nn

from trtbench.models import register_builtin


def _conv(in_channels: int, out_channels: int, stride: int = 1) -> dict:
    """Keyword arguments of a 3x3, padding-1 convolution."""
    return {"in_channels": in_channels, "out_channels": out_channels, "kernel_size": 3, "padding": 1,
            **({"stride": stride} if stride != 1 else {})}


def _stage(in_channels: int, out_channels: int, num_blocks: int) -> dict:
    """Arguments of one ``convN_x`` stage; its first block downsamples when the width changes."""
    blocks = {}
    for index in range(num_blocks):
        block_in = in_channels if index == 0 else out_channels
        stride = 2 if block_in != out_channels else 1
        blocks[f"Block{index + 1}"] = {"conv1": _conv(block_in, out_channels, stride),
                                       "conv2": _conv(out_channels, out_channels),
                                       **({"downsample": True} if stride != 1 else {})}
    return {"blocks": blocks}


STAGES = ("conv2_x", "conv3_x", "conv4_x", "conv5_x")
"""The study's four ``convN_x`` stages, in order."""

RESNET34_ARGS: dict = {
    "conv_1": {"in_channels": 3, "out_channels": 64, "kernel_size": 7, "stride": 2, "padding": 3},
    "maxpool_1": {"kernel_size": 3, "stride": 2, "padding": 1},
    "conv2_x": _stage(64, 64, 3),
    "conv3_x": _stage(64, 128, 4),
    "conv4_x": _stage(128, 256, 6),
    "conv5_x": _stage(256, 512, 3),
    "avgpool": {"kernel_size": 2},
    "final_layer": {"in_features": 4608, "out_features": 1000},
}
"""The study's ResNet34 arguments: ``nn.Conv2d``/``nn.MaxPool2d``/``nn.AvgPool2d``/``nn.Linear`` kwargs per layer."""


class SeedBasicBlock(nn.Module):
    """Two ``BN(ReLU(conv))`` layers plus a shortcut (identity, or ``ReLU(conv)`` with conv1's kwargs)."""

    def __init__(self, conv1: dict, conv2: dict, downsample: bool = False):
        super().__init__()
        self.Conv_1 = nn.Conv2d(**conv1)
        self.BN_1 = nn.BatchNorm2d(conv1["out_channels"])
        self.Conv_2 = nn.Conv2d(**conv2)
        self.BN_2 = nn.BatchNorm2d(conv2["out_channels"])
        self.downsample_flag = downsample
        self.downsample = nn.Conv2d(**conv1) if downsample else nn.Identity()
        self.activation = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.BN_1(self.activation(self.Conv_1(x)))
        out = self.BN_2(self.activation(self.Conv_2(out)))
        shortcut = self.downsample(x)
        if self.downsample_flag:
            shortcut = self.activation(shortcut)
        return self.activation(out + shortcut)


class SeedStage(nn.Module):
    """One ``convN_x`` stage: its blocks, in the order of the ``blocks`` dict."""

    def __init__(self, blocks: dict):
        super().__init__()
        self.layers = nn.Sequential(*(SeedBasicBlock(**config) for config in blocks.values()))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


class SeedResNet34(nn.Module):
    """The study's ResNet34; every argument is a dict of layer kwargs as in :data:`RESNET34_ARGS`, and
    ``stages`` holds the arguments of its four stages by name (``conv2_x`` to ``conv5_x``: :data:`STAGES`)."""

    def __init__(self, conv_1: dict, maxpool_1: dict, stages: dict[str, dict], avgpool: dict, final_layer: dict):
        super().__init__()
        if set(stages) != set(STAGES):
            raise TypeError(f"SeedResNet34: stages must be {list(STAGES)}, got {sorted(stages)}")
        self.activation = nn.ReLU()
        self.Conv_1 = nn.Conv2d(**conv_1)
        self.BN_1 = nn.BatchNorm2d(conv_1["out_channels"])
        self.MaxPool_1 = nn.MaxPool2d(**maxpool_1)
        self.Conv2_x = SeedStage(**stages["conv2_x"])
        self.Conv3_x = SeedStage(**stages["conv3_x"])
        self.Conv4_x = SeedStage(**stages["conv4_x"])
        self.Conv5_x = SeedStage(**stages["conv5_x"])
        self.AvgPool = nn.AvgPool2d(**avgpool)
        self.Final_layer = nn.Linear(**final_layer)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.MaxPool_1(self.BN_1(self.activation(self.Conv_1(x))))
        x = self.Conv5_x(self.Conv4_x(self.Conv3_x(self.Conv2_x(x))))
        x = torch.flatten(self.AvgPool(x), start_dim=1)
        return self.Final_layer(x)


@register_builtin("seed_resnet34")
def seed_resnet34(num_classes: int = 1000, **overrides) -> SeedResNet34:
    """Study 004's ResNet34 (224x224 input only). ``overrides`` replace whole entries of
    :data:`RESNET34_ARGS` (e.g. ``avgpool``); ``num_classes`` sets the final layer's outputs."""
    unknown = sorted(set(overrides) - set(RESNET34_ARGS))
    if unknown:
        raise TypeError(f"seed_resnet34: unknown argument(s) {unknown}; "
                        f"expected num_classes or one of {sorted(RESNET34_ARGS)}")
    args = copy.deepcopy(RESNET34_ARGS)
    args.update(copy.deepcopy(overrides))
    args["final_layer"]["out_features"] = num_classes
    stages = {name: args.pop(name) for name in STAGES}
    return SeedResNet34(stages=stages, **args)
