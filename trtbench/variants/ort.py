"""ONNX Runtime on the CPU (``CPUExecutionProvider``), threads matched to the run's."""

from __future__ import annotations

from trtbench.variants import register
from trtbench.variants.ort_common import CPU, OrtVariant


@register
class Ort(OrtVariant):
    name = "ort"
    description = ("ONNX Runtime, CPU execution provider, on the onnx export (int8: static QDQ quantization); "
                   "saves the .onnx")
    provider = CPU
    quantizes = True  # INT8: onnxruntime.quantization's static QDQ quantizer (trtbench.quantize.ort)
