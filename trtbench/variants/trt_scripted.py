"""Torch-TensorRT, TorchScript frontend (``ir="ts"``) on the ``scripted`` module."""

from __future__ import annotations

from trtbench.variants import register
from trtbench.variants.trt_common import TorchScriptFrontendVariant


@register
class TensorRTScripted(TorchScriptFrontendVariant):
    name = "trt_scripted"
    description = "Torch-TensorRT TorchScript frontend (ir='ts') on the scripted module, guarded input ranges"
    depends_on = "scripted"
