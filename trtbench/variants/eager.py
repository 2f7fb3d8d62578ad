"""The baseline: the model as written, run by the PyTorch eager interpreter."""

from __future__ import annotations

from dataclasses import dataclass

from trtbench.variants import Built, BuildContext, Variant, cuda_graphs, register


@dataclass
class EagerOptions:
    """``cuda_graphs: true`` replays the forward pass as one CUDA graph (CUDA, static shapes only)."""

    cuda_graphs: bool = False


@register
class Eager(Variant):
    name = "eager"
    Options = EagerOptions
    description = "PyTorch eager mode (the baseline every other variant is compared with)"

    def build(self, model, ctx: BuildContext) -> Built:
        if self.options_of(ctx).cuda_graphs:
            cuda_graphs.check_can_capture(ctx)
            return Built(cuda_graphs.GraphReplay(model, ctx.example_inputs), {"cuda_graphs": True})
        return Built(model)
