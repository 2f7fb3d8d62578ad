"""``torch.jit.script``: TorchScript compiled from the model's Python source."""

from __future__ import annotations

import torch

from trtbench.core.errors import Unavailable
from trtbench.variants import Built, BuildContext, register
from trtbench.variants.torchscript_common import TorchScriptVariant


@register
class Scripted(TorchScriptVariant):
    name = "scripted"
    description = "torch.jit.script (fails on models whose Python TorchScript cannot compile)"

    def build(self, model, ctx: BuildContext) -> Built:
        if ctx.fp32_modules:
            raise Unavailable(f"torch.jit.script cannot compile the casts (Python forward hooks) around the modules "
                              f"the fp32 fallback keeps ({', '.join(ctx.fp32_modules)}); traced and exported carry "
                              "them")
        return Built(torch.jit.script(model))
