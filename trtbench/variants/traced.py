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
    description = "torch.jit.trace with an example at the opt shape (checked at every shape, as every row is)"
    Options = TraceOptions

    def build(self, model, ctx: BuildContext) -> Built:
        strict = self.options_of(ctx).strict
        # no trace check at the other shapes: each row's accuracy check at every shape finds a shape-bound trace
        return Built(torch.jit.trace(model, ctx.example_inputs, check_trace=False, strict=strict), {"strict": strict})
