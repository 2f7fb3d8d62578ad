"""``torch.jit.trace`` at the opt shape, checked at every benchmarked shape."""

from __future__ import annotations

import torch

from trtbench.variants import Built, BuildContext, register
from trtbench.variants.torchscript import TorchScriptVariant


@register
class Traced(TorchScriptVariant):
    name = "traced"
    description = "torch.jit.trace with an example at the opt shape, trace-checked at min/opt/max"

    def build(self, model, ctx: BuildContext) -> Built:
        checks = [inputs for label, inputs in ctx.shape_inputs.items() if label != "opt"]
        traced = torch.jit.trace(model, ctx.example_inputs, check_inputs=checks or None)
        return Built(traced, {"trace_checked_shapes": ["opt", *[l for l in ctx.shape_inputs if l != "opt"]]})
