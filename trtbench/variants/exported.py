"""``torch.export``: an ExportedProgram with the config's dynamic dims, saved as ``.pt2`` (docs/backends.md)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from torch.utils import _pytree as pytree

from trtbench.core.fsutil import save_through_memory
from trtbench.variants import Artifact, Built, BuildContext, Variant, register

PLAIN_VALUES = (type(None), bool, int, float, str)  # non-tensor leaves that export as constants


def dynamic_shapes(input_specs) -> tuple:
    """One ``{dim: Dim}`` per input for every dim whose min and max differ, one ``Dim`` per position and range."""
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


def export_examples(input_specs, example_inputs: tuple) -> tuple:
    """``example_inputs`` (at opt) with every dynamic dim of 1 grown to 2 (at most its max): what export traces at."""
    grown = []
    for spec, example in zip(input_specs, example_inputs):
        if isinstance(example, torch.Tensor):
            for dim, (lo, hi) in enumerate(zip(spec.min_shape, spec.max_shape)):
                if lo != hi and dim < example.dim() and example.shape[dim] == 1:
                    example = torch.cat([example] * min(2, hi), dim=dim)
        grown.append(example)
    return tuple(grown) + tuple(example_inputs[len(grown):])


class FlatOutputs(torch.nn.Module):
    """``model`` with its output flattened to the tuple of its tensors, in pytree order."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, *inputs):
        return tuple(leaf for leaf in pytree.tree_leaves(self.model(*inputs)) if isinstance(leaf, torch.Tensor))


def _key_name(key) -> str:
    for attribute in ("key", "name", "idx"):  # MappingKey, GetAttrKey, SequenceKey
        if hasattr(key, attribute):
            return str(getattr(key, attribute))
    return str(key)


def _spec_names(spec, prefix: str) -> list[str]:
    """Leaf names from a TreeSpec alone: by a node's context where it holds its children's keys, else numbered."""
    if spec.is_leaf():
        return [prefix]
    children = [spec.child(i) for i in range(spec.num_children)]
    context = spec.context
    keys = (context if isinstance(context, (list, tuple)) and len(context) == len(children)
            and all(isinstance(k, (str, int)) for k in context) else range(len(children)))
    return [name for key, child in zip(keys, children)
            for name in _spec_names(child, f"{prefix}.{key}" if prefix else str(key))]


def output_names(output) -> list[str]:
    """A name per tensor of a model output, in pytree order: ``logits``, ``hidden_states.0``; ``output`` alone."""
    try:
        paths, _ = pytree.tree_flatten_with_path(output)
        named = [(".".join(_key_name(k) for k in path), leaf) for path, leaf in paths]
    except ValueError:
        leaves, spec = pytree.tree_flatten(output)
        named = list(zip(_spec_names(spec, ""), leaves))
    return [name or "output" for name, leaf in named if isinstance(leaf, torch.Tensor)]


def flat_outputs(model: torch.nn.Module, example_inputs: tuple) -> tuple[torch.nn.Module, list[str], str | None]:
    """``model`` to export, its output tensors' names, and the container type it flattened (None: none)."""
    with torch.no_grad():
        output = model(*example_inputs)
    names = output_names(output)
    if isinstance(output, torch.Tensor) or (type(output) in (tuple, list)
                                            and all(isinstance(x, torch.Tensor) for x in output)):
        return model, names, None
    opaque = {type(leaf).__qualname__ for leaf in pytree.tree_leaves(output)
              if not isinstance(leaf, (torch.Tensor, *PLAIN_VALUES))}
    if opaque:
        raise TypeError(f"the model's output holds {', '.join(sorted(opaque))}, which torch's pytree cannot "
                        f"flatten; register it (torch.utils._pytree.register_dataclass or register_pytree_node)")
    container = type(output)
    return FlatOutputs(model), names, f"{container.__module__}.{container.__qualname__}"


@dataclass
class ExportOptions:
    """``strict: true`` traces with TorchDynamo; the default traces with the Python interpreter."""

    strict: bool = False


@register
class Exported(Variant):
    name = "exported"
    description = ("torch.export.export with dynamic dims from min/max (example at opt, a dynamic 1 there "
                   "grown to 2), run via .module()")
    Options = ExportOptions

    def build(self, model, ctx: BuildContext) -> Built:
        strict = self.options_of(ctx).strict
        examples = export_examples(ctx.input_specs, ctx.example_inputs)
        exportable, names, flattened = flat_outputs(model, examples)
        shapes = dynamic_shapes(ctx.input_specs)
        if flattened:  # FlatOutputs.forward(*inputs) takes them all as one argument
            shapes = {"inputs": shapes}
        program = torch.export.export(exportable, examples, dynamic_shapes=shapes, strict=strict)
        info = {"strict": strict, "outputs": names, **({"outputs_flattened_from": flattened} if flattened else {})}
        return Built(program.module(), info, state=program)

    def save(self, built: Built, directory: Path, stem: str) -> list[Artifact]:
        path = directory / f"{stem}.pt2"
        save_through_memory(path, lambda fh: torch.export.save(built.state, fh))
        return [Artifact(path=path, loader="torch.export.load", outputs=built.info["outputs"])]

    def load(self, artifact: Artifact, device: torch.device):
        return torch.export.load(str(artifact.path)).module()
