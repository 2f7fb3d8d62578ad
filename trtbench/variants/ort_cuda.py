"""ONNX Runtime on an NVIDIA GPU (``CUDAExecutionProvider``, from ``onnxruntime-gpu``), inputs bound in device memory."""

from __future__ import annotations

from trtbench.variants import BuildContext, register
from trtbench.variants.ort_common import CUDA, OrtVariant, cuda_device_id


@register
class OrtCuda(OrtVariant):
    name = "ort_cuda"
    description = "ONNX Runtime, CUDA execution provider (onnxruntime-gpu), IOBinding inputs; saves the .onnx"
    provider = CUDA

    def provider_options(self, ctx: BuildContext, input_names: list[str]) -> dict:
        return {"device_id": cuda_device_id(ctx.device)}
