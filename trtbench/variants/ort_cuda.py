"""ONNX Runtime on an NVIDIA GPU (``CUDAExecutionProvider``), inputs bound in device memory."""

from __future__ import annotations

from trtbench.variants import register
from trtbench.variants.ort_common import CUDA, OrtVariant


@register
class OrtCuda(OrtVariant):
    name = "ort_cuda"
    description = "ONNX Runtime, CUDA execution provider (onnxruntime-gpu), IOBinding inputs; saves the .onnx"
    provider = CUDA  # its options: the device (OrtVariant.provider_options)
