"""The baseline: the model as written, run by the PyTorch eager interpreter."""

from __future__ import annotations

from trtbench.variants import Built, BuildContext, Variant, register


@register
class Eager(Variant):
    name = "eager"
    description = "PyTorch eager mode (the baseline every other variant is compared with)"

    def build(self, model, ctx: BuildContext) -> Built:
        return Built(model)
