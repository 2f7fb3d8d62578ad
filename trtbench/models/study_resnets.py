"""Plain and bottleneck ResNets 18/34/50/101/152 of the CPU profiling study (study 000) (more: docs/backends.md, "Module
notes", trtbench/models/study_resnets.py)."""

from __future__ import annotations

from functools import partial
from typing import Callable

import torch
from torch import nn

from trtbench.models import register_builtin

STAGE_DEPTHS: dict[int, tuple[int, int, int, int]] = {
    18: (2, 2, 2, 2),
    34: (3, 4, 6, 3),
    50: (3, 4, 6, 3),
    101: (3, 4, 23, 3),
    152: (3, 8, 36, 3),
}
"""Blocks per stage for each depth name (the standard ResNet stage depths)."""

STAGE_WIDTHS = (64, 128, 256, 512)
"""Output channels of the four stages (and of every block in them)."""


def projection(in_channels: int, out_channels: int, stride: int) -> nn.Module:
    """The shortcut: identity when the shape is unchanged, else 1x1 strided conv + BN."""
    if stride == 1 and in_channels == out_channels:
        return nn.Identity()
    return nn.Sequential(nn.Conv2d(in_channels, out_channels, 1, stride=stride, bias=False),
                         nn.BatchNorm2d(out_channels))


class BasicBlock(nn.Module):
    """Two 3x3 convolutions with BatchNorm, plus the (projected) input, then ReLU."""

    def __init__(self, in_channels: int, out_channels: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_channels)
        self.downsample = projection(in_channels, out_channels, stride)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + self.downsample(x))


class BottleneckBlock(nn.Module):
    """1x1 reduce to ``out_channels // 4`` (all of it when ``large_mode``), 3x3 (strided), 1x1 expand; BN after each."""

    def __init__(self, in_channels: int, out_channels: int, stride: int, large_mode: bool = False):
        super().__init__()
        hidden = out_channels if large_mode else out_channels // 4
        self.conv1 = nn.Conv2d(in_channels, hidden, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(hidden)
        self.conv2 = nn.Conv2d(hidden, hidden, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(hidden)
        self.conv3 = nn.Conv2d(hidden, out_channels, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(out_channels)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = projection(in_channels, out_channels, stride)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + self.downsample(x))


class StudyResNet(nn.Module):
    """Stem, four stages of ``stage_depths`` blocks (each ``make_block(in_channels, out_channels, stride)``) at
    :data:`STAGE_WIDTHS`, pooled linear head."""

    def __init__(self, stage_depths: tuple[int, ...], make_block: Callable[[int, int, int], nn.Module],
                 num_classes: int = 1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        in_channels = 64
        stages = []
        for index, (depth, width) in enumerate(zip(stage_depths, STAGE_WIDTHS)):
            blocks = []
            for position in range(depth):
                stride = 2 if index > 0 and position == 0 else 1
                blocks.append(make_block(in_channels, width, stride))
                in_channels = width
            stages.append(nn.Sequential(*blocks))
        self.layer1, self.layer2, self.layer3, self.layer4 = stages
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(STAGE_WIDTHS[-1], num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def plain_resnet(depth: int, num_classes: int = 1000) -> StudyResNet:
    """Basic-block ResNet at the stage depths of ``depth`` (one of :data:`STAGE_DEPTHS`)."""
    return StudyResNet(STAGE_DEPTHS[depth], BasicBlock, num_classes)


def bottleneck_resnet(depth: int, num_classes: int = 1000, large_mode: bool = False) -> StudyResNet:
    """Bottleneck ResNet at the stage depths of ``depth``; the hidden width is the stage width / 4 (large mode: all)."""
    return StudyResNet(STAGE_DEPTHS[depth], partial(BottleneckBlock, large_mode=large_mode), num_classes)


def _register(depth: int) -> None:
    @register_builtin(f"plain_resnet{depth}")
    def plain(num_classes: int = 1000) -> StudyResNet:
        return plain_resnet(depth, num_classes)

    @register_builtin(f"bottleneck_resnet{depth}")
    def bottleneck(num_classes: int = 1000, large_mode: bool = False) -> StudyResNet:
        return bottleneck_resnet(depth, num_classes, large_mode)

    plain.__doc__ = f"Study 000's plain ResNet{depth}: basic blocks, stage depths {STAGE_DEPTHS[depth]}."
    bottleneck.__doc__ = (f"Study 000's bottleneck ResNet{depth}: 1x1-3x3-1x1 blocks, stage depths "
                          f"{STAGE_DEPTHS[depth]}; large_mode quadruples the hidden channels.")


for _depth in STAGE_DEPTHS:
    _register(_depth)
