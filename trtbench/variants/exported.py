"""``torch.export``: an ExportedProgram with the config's dynamic dims, saved as ``.pt2``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from trtbench.variants import Artifact, Built, BuildContext, Variant, register


def dynamic_shapes(input_specs) -> tuple:
    """One ``{dim: Dim}`` mapping per input for every dim whose min and max differ.

    Inputs that have a dynamic dim at the same position with the same range share one
    ``Dim`` (the batch of ``input_ids`` and ``attention_mask``, say): torch.export needs dims
    that the model relates to be one symbol.
    """
    shared: dict[tuple, object] = {}
    specs = []
    for spec in input_specs:
        dims = {}
        for i, (lo, hi) in enumerate(zip(spec.min_shape, spec.max_shape)):
            if lo != hi:
                key = (i, lo, hi)
                if key not in shared:
                    shared[key] = torch.export.Dim(f"{spec.name}_dim{i}", min=lo, max=hi)
                dims[i] = shared[key]
        specs.append(dims or None)
    return tuple(specs)


@dataclass
class ExportOptions:
    """``strict: true`` traces with TorchDynamo (Python-level soundness checks, fewer models pass);
    the default non-strict mode traces with the Python interpreter, as ``torch.export`` does by default."""

    strict: bool = False


@register
class Exported(Variant):
    name = "exported"
    description = "torch.export.export with dynamic dims from min/max (example at opt), run via .module()"
    Options = ExportOptions
    exports_at_opt = True

    def build(self, model, ctx: BuildContext) -> Built:
        strict = (ctx.options or ExportOptions()).strict
        program = torch.export.export(model, ctx.example_inputs, dynamic_shapes=dynamic_shapes(ctx.input_specs),
                                      strict=strict)
        return Built(program.module(), {"strict": strict}, state=program)

    def save(self, built: Built, directory: Path, stem: str) -> list[Artifact]:
        path = directory / f"{stem}.pt2"
        torch.export.save(built.state, str(path))
        return [Artifact(path=path, loader="torch.export.load")]

    def load(self, artifact: Artifact, device: torch.device):
        return torch.export.load(str(artifact.path)).module()
