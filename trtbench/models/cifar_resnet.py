"""CIFAR-10 ResNets of depth 6n + 2 (He et al. 2016, section 4.2): the layer-wise timing study's (study 001) (more:
docs/backends.md, "Module notes", trtbench/models/cifar_resnet.py)."""

from __future__ import annotations

import torch
from torch import nn

from trtbench.models import register_builtin
from trtbench.models.study_resnets import projection


class CifarBasicBlock(nn.Module):
    """conv3x3-BN-ReLU-conv3x3-BN, plus the input (or its 1x1 projection), then ReLU."""

    def __init__(self, in_channels: int, out_channels: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_channels)
        self.relu = nn.ReLU(inplace=True)
        self.shortcut = projection(in_channels, out_channels, stride)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + self.shortcut(x))


class CifarResNet(nn.Module):
    """ResNet-(6n+2) for 32x32 images with ``blocks_per_stage`` = n."""

    def __init__(self, blocks_per_stage: int, num_classes: int = 10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.relu = nn.ReLU(inplace=True)
        stages = []
        in_channels = 16
        for stage, channels in enumerate((16, 32, 64)):
            for index in range(blocks_per_stage):
                stride = 2 if stage > 0 and index == 0 else 1
                stages.append(CifarBasicBlock(in_channels, channels, stride))
                in_channels = channels
        self.blocks = nn.Sequential(*stages)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(64, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.blocks(self.relu(self.bn1(self.conv1(x))))
        return self.fc(torch.flatten(self.pool(x), 1))


def cifar_resnet(depth: int, num_classes: int = 10) -> CifarResNet:
    """The CIFAR ResNet of ``depth`` layers; depth must be 6n + 2 (20, 32, 44, 56, 110, ...)."""
    if depth < 8 or (depth - 2) % 6:
        raise ValueError(f"CIFAR ResNet depth must be 6n + 2 with n >= 1, got {depth}")
    return CifarResNet((depth - 2) // 6, num_classes)


def _register(depth: int) -> None:
    @register_builtin(f"cifar_resnet{depth}")
    def build(num_classes: int = 10) -> CifarResNet:
        return cifar_resnet(depth, num_classes)

    build.__doc__ = f"CIFAR-10 ResNet{depth} ({(depth - 2) // 6} blocks per stage), input N x 3 x 32 x 32."


for _depth in (20, 32, 56):
    _register(_depth)
