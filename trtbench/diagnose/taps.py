"""Each layer's error from one call of a tapped build, against the fp32 reference streamed through the graph:
**carried** (the layer's output against fp32's) and **own** (against the layer in fp32 on the build's own input; None
where that input's carried SQNR is under ``INPUT_DB``) (docs/accuracy.md, "Taps")."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence

import torch
from torch import fx
from torch.utils import _pytree as pytree

from trtbench.diagnose.graph import Layer, LayerGraph
from trtbench.measure.accuracy import sqnr_db

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


def layer_errors(graph: LayerGraph, inputs: tuple, tapped: Sequence[torch.Tensor]) -> list[LayerError]:
    """Each layer's :class:`LayerError`, in graph order, from ``tapped`` (the tensors a tapped build returned on
    ``inputs`` after the model's own output, in :meth:`~trtbench.diagnose.graph.LayerGraph.tap_names` order)."""
    device = inputs[0].device if inputs else torch.device("cpu")
    taps = {name: t.detach().to(device, torch.float32) if t.is_floating_point() else t.detach().to(device)
            for name, t in zip(graph.tap_names(), tapped)}
    reference = _Reference(graph, inputs, taps)
    reference.run(*inputs)
    return reference.errors


class _Reference(fx.Interpreter):
    """The fp32 reference streamed through the graph: each layer judged at its last node, each reference value
    dropped after its last use (its users', or the judging of a layer that reads it)."""

    def __init__(self, graph: LayerGraph, inputs: tuple, taps: dict):
        super().__init__(graph.module, garbage_collect_values=False)
        self.layer_graph, self.taps = graph, taps
        nodes = list(graph.module.graph.nodes)
        self.placeholders = {n.name: t for n, t in zip((n for n in nodes if n.op == "placeholder"), inputs)}
        self.position = {node: i for i, node in enumerate(nodes)}
        judged_at = {graph.node(name): self.position[graph.node(layer.nodes[-1])] for layer in graph.layers
                     for name in layer.nodes}  # a layer is judged at its last node, reading its inputs' references
        self.last_use = {node: max((judged_at.get(u, self.position[u]) for u in node.users), default=i)
                         for i, node in enumerate(nodes)}
        self.by_last = {layer.nodes[-1]: layer for layer in graph.layers}
        self.alone = fx.Interpreter(graph.module, garbage_collect_values=False)  # runs one layer on the build's input
        self.errors: list[LayerError] = []

    def run_node(self, node: fx.Node):
        at = self.position[node]
        for done in [n for n in self.env if self.last_use[n] < at and n.op != "placeholder"]:
            del self.env[done]
        value = self.env[node] = super().run_node(node)
        if node.name in self.by_last:
            self.errors.append(self._judge(self.by_last[node.name]))
        return value

    def _judge(self, layer: Layer) -> LayerError:
        if not layer.outputs:
            return LayerError(layer.path, layer.op, None, None, None)
        outputs = [self.taps[name] for name in layer.outputs]
        references = [self.env[self.layer_graph.node(name)] for name in layer.outputs]
        own = self._own(layer)
        own_db = None if own is None else sqnr_db(outputs, own)
        return LayerError(layer.path, layer.op, own_db, sqnr_db(outputs, references),
                          max_rel_err(outputs, references))

    def _own(self, layer: Layer) -> Optional[list[torch.Tensor]]:
        """The layer's outputs run in fp32 on the build's own input to it; None where that input no longer agrees
        with fp32's."""
        inside, env = set(layer.nodes), {}
        self.alone.env = env
        for name in layer.nodes:
            node = self.layer_graph.node(name)
            for arg in node.all_input_nodes:
                if arg.name in inside or arg in env:
                    continue
                value = self.taps.get(arg.name, self.placeholders.get(arg.name))
                value = self.env[arg] if value is None else value
                if arg.name in self.taps and sqnr_db([value], [self.env[arg]]) < INPUT_DB:
                    return None
                env[arg] = value
            env[node] = self.alone.run_node(node)
        return [env[self.layer_graph.node(name)] for name in layer.outputs]
