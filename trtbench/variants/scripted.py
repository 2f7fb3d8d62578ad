"""``torch.jit.script``: TorchScript compiled from the model's Python source."""

from __future__ import annotations

import torch

from trtbench.variants import Built, BuildContext, register
from trtbench.variants.torchscript_common import TorchScriptVariant


@register
class Scripted(TorchScriptVariant):
    name = "scripted"
    description = "torch.jit.script (fails on models whose Python TorchScript cannot compile)"

    def build(self, model, ctx: BuildContext) -> Built:
        return Built(torch.jit.script(model))
