"""Each layer's error from one call of a tapped build, compared as the fp32 reference streams through the graph,
each reference value dropped after its last use: **carried** (the build's output of the layer against fp32's) and
**own** (against the layer run in fp32 on the build's own input to it; None where that input's carried SQNR is
under ``INPUT_DB``). The reasons: docs/accuracy.md, "Taps".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterator, Optional, Sequence

import torch
from torch import fx
from torch.utils import _pytree as pytree

from trtbench.diagnose.graph import Layer, LayerGraph

INPUT_DB = 10.0  # a layer's own error is judged where its input's carried SQNR is at least this


@dataclass(frozen=True)
class LayerError:
    """One layer's errors: SQNR in dB (``inf``: exact; ``-inf``: not finite where fp32 is) and the carried output's
    max error relative to fp32's largest magnitude."""

    path: str
    op: str
    own_sqnr_db: Optional[float]
    carried_sqnr_db: Optional[float]
    max_rel_err: Optional[float]

    def to_dict(self) -> dict:
        return {"path": self.path, "op": self.op, "own_sqnr_db": json_db(self.own_sqnr_db),
                "carried_sqnr_db": json_db(self.carried_sqnr_db), "max_rel_err": json_db(self.max_rel_err)}


def json_db(value: Optional[float]):
    """A float JSON keeps: infinities as the strings ``inf`` and ``-inf``."""
    if value is None or math.isfinite(value):
        return None if value is None else round(value, 3)
    return "inf" if value > 0 else "-inf"


def sqnr_db(outputs: Sequence[torch.Tensor], references: Sequence[torch.Tensor]) -> float:
    """Signal over noise of ``outputs`` against ``references``, over all of them, in dB."""
    signal = noise = 0.0
    for out, ref in zip(outputs, references):
        out, ref = out.detach().double(), ref.detach().double()
        if not bool(torch.isfinite(out).all()):
            return -math.inf
        signal += float(ref.pow(2).sum())
        noise += float((out - ref).pow(2).sum())
    if noise == 0:
        return math.inf
    return 10 * math.log10(signal / noise) if signal > 0 else -math.inf


def max_rel_err(outputs: Sequence[torch.Tensor], references: Sequence[torch.Tensor]) -> float:
    worst = scale = 0.0
    for out, ref in zip(outputs, references):
        out, ref = out.detach().double(), ref.detach().double()
        if not bool(torch.isfinite(out).all()):
            return math.inf
        worst = max(worst, float((out - ref).abs().max())) if out.numel() else worst
        scale = max(scale, float(ref.abs().max())) if ref.numel() else scale
    return worst / scale if scale > 0 else worst


def output_leaves(output) -> list[torch.Tensor]:
    """Each tensor of a (possibly nested) output, detached, its dtype kept (a position id stays an integer)."""
    return [t.detach() for t in pytree.tree_leaves(output) if isinstance(t, torch.Tensor)]


def layer_errors(graph: LayerGraph, inputs: tuple, tapped: Sequence[torch.Tensor]) -> Iterator[LayerError]:
    """Each layer's :class:`LayerError`, in graph order, from ``tapped`` (the tensors a tapped build returned on
    ``inputs`` after the model's own output, in :meth:`~trtbench.diagnose.graph.LayerGraph.tap_names` order)."""
    device = inputs[0].device if inputs else torch.device("cpu")
    taps = {name: t.detach().to(device, torch.float32) if t.is_floating_point() else t.detach().to(device)
            for name, t in zip(graph.tap_names(), tapped)}
    nodes = list(graph.module.graph.nodes)
    position = {node: i for i, node in enumerate(nodes)}
    judged_at = {graph.node(name): position[graph.node(layer.nodes[-1])] for layer in graph.layers
                 for name in layer.nodes}  # a layer is judged at its last node, reading its inputs' references
    last_use = {node: max((judged_at.get(u, position[u]) for u in node.users), default=i)
                for i, node in enumerate(nodes)}
    ref: dict[fx.Node, object] = {}
    placeholders = iter(inputs)
    by_last = {layer.nodes[-1]: layer for layer in graph.layers}
    for i, node in enumerate(nodes):
        if node.op == "output":
            break
        ref[node] = next(placeholders) if node.op == "placeholder" else _run(graph.module, node, ref)
        if node.name in by_last:
            yield _judge(graph, by_last[node.name], ref, taps, inputs)
        for done in [n for n in ref if last_use[n] <= i and n.op != "placeholder"]:
            del ref[done]


def _run(module: fx.GraphModule, node: fx.Node, env: dict):
    """``node`` evaluated with its arguments from ``env``."""
    args = fx.map_arg(node.args, lambda n: env[n])
    kwargs = fx.map_arg(node.kwargs, lambda n: env[n])
    if node.op == "get_attr":
        target = module
        for part in str(node.target).split("."):
            target = getattr(target, part)
        return target
    if node.op == "call_module":
        return module.get_submodule(str(node.target))(*args, **kwargs)
    if node.op == "call_method":
        return getattr(args[0], node.target)(*args[1:], **kwargs)
    return node.target(*args, **kwargs)


def _judge(graph: LayerGraph, layer: Layer, ref: dict, taps: dict, inputs: tuple) -> LayerError:
    if not layer.outputs:
        return LayerError(layer.path, layer.op, None, None, None)
    outputs = [taps[name] for name in layer.outputs]
    references = [ref[graph.node(name)] for name in layer.outputs]
    own = _own(graph, layer, ref, taps, inputs)
    own_db = None if own is None else sqnr_db(outputs, own)
    return LayerError(layer.path, layer.op, own_db, sqnr_db(outputs, references), max_rel_err(outputs, references))


def _own(graph: LayerGraph, layer: Layer, ref: dict, taps: dict, inputs: tuple) -> Optional[list[torch.Tensor]]:
    """The layer's outputs run in fp32 on the build's own input to it; None where that input no longer agrees with
    fp32's."""
    inside = set(layer.nodes)
    placeholders = {n.name: t for n, t in zip((n for n in graph.module.graph.nodes if n.op == "placeholder"), inputs)}
    env: dict[fx.Node, object] = {}
    for name in layer.nodes:
        node = graph.node(name)
        for arg in node.all_input_nodes:
            if arg.name in inside or arg in env:
                continue
            value = taps.get(arg.name, placeholders.get(arg.name))
            value = ref[arg] if value is None else value
            if arg.name in taps and sqnr_db([value], [ref[arg]]) < INPUT_DB:
                return None
            env[arg] = value
        env[node] = _run(graph.module, node, env)
    return [env[graph.node(name)] for name in layer.outputs]
