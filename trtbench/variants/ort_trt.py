"""ONNX Runtime's TensorRT execution provider, the CUDA provider for the rest; its profile the config's min/opt/max."""

from __future__ import annotations

from trtbench.variants import BuildContext, register
from trtbench.variants.ort_common import CUDA, TENSORRT, OrtVariant, cuda_device_id


def profile_shapes(input_specs, input_names: list[str], label: str) -> str:
    """``name:1x3x224x224,...`` for every dynamic input at ``label`` (min, opt or max)."""
    return ",".join(f"{name}:{'x'.join(map(str, spec.shape_for(label)))}"
                    for name, spec in zip(input_names, input_specs) if spec.is_dynamic)


@register
class OrtTensorRT(OrtVariant):
    name = "ort_trt"
    description = "ONNX Runtime, TensorRT execution provider (CUDA provider for the rest), engine for min..max"
    provider = TENSORRT

    def provider_options(self, ctx: BuildContext, input_names: list[str]) -> dict:
        options = super().provider_options(ctx, input_names)
        if any(spec.is_dynamic for spec in ctx.input_specs):
            for label in ("min", "opt", "max"):
                options[f"trt_profile_{label}_shapes"] = profile_shapes(ctx.input_specs, input_names, label)
        return options

    def providers(self, ctx: BuildContext, input_names: list[str]) -> list[list]:
        return [*super().providers(ctx, input_names), [CUDA, {"device_id": cuda_device_id(ctx.device)}]]
