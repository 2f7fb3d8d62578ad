"""Torch-TensorRT, TorchScript frontend (``ir="ts"``) on the ``traced`` module."""

from __future__ import annotations

from trtbench.variants import register
from trtbench.variants.trt_common import TorchScriptFrontendVariant


@register
class TensorRTTraced(TorchScriptFrontendVariant):
    name = "trt_traced"
    description = "Torch-TensorRT TorchScript frontend (ir='ts') on the traced module, guarded input ranges"
    depends_on = "traced"
