"""``torch.jit.trace`` at the opt shape, checked at every benchmarked shape."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from trtbench.variants import Built, BuildContext, register
from trtbench.variants.torchscript_common import TorchScriptVariant


@dataclass
class TraceOptions:
    """``strict: false`` lets the trace record mutable containers (a model that returns a dict traces)."""

    strict: bool = True


@register
class Traced(TorchScriptVariant):
    name = "traced"
    description = "torch.jit.trace with an example at the opt shape, trace-checked at min/opt/max"
    Options = TraceOptions

    def build(self, model, ctx: BuildContext) -> Built:
        strict = self.options_of(ctx).strict
        checks = [inputs for label, inputs in ctx.shape_inputs.items() if label != "opt"]
        traced = torch.jit.trace(model, ctx.example_inputs, check_inputs=checks or None, strict=strict)
        return Built(traced, {"trace_checked_shapes": ["opt", *[label for label in ctx.shape_inputs if label != "opt"]],
                              "strict": strict})
