"""A model as layers in graph order, named by module path (docs/accuracy.md, "Names"), and the graphs the harness
builds from it: every layer's outputs tapped (:meth:`LayerGraph.tapped`), a prefix and a suffix (:meth:`~.split`)."""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch
from torch import fx
from torch.fx.passes.shape_prop import ShapeProp, TensorMetadata


class UntraceableModel(Exception):
    """``torch.fx`` cannot trace the model (data-dependent control flow): neither taps nor splices open it."""


@dataclass(frozen=True)
class Layer:
    """One layer: its module path, its op type, its nodes (graph order) and the tensors it hands on (node names)."""

    path: str
    op: str
    nodes: tuple[str, ...]
    outputs: tuple[str, ...]


class _Tracer(fx.Tracer):
    def is_leaf_module(self, m: torch.nn.Module, qualname: str) -> bool:
        return (m.__module__.startswith("torch.nn") and not list(m.children())) or isinstance(
            m, torch.nn.MultiheadAttention)


def _scope(node: fx.Node) -> str:
    if node.op == "call_module":
        return str(node.target)
    stack = node.meta.get("nn_module_stack") or {}
    return next(reversed(stack.values()))[0] if stack else ""  # each entry: (module path, module type)


def _op(node: fx.Node, root: torch.nn.Module) -> str:
    if node.op == "call_module":
        return type(root.get_submodule(str(node.target))).__name__
    return getattr(node.target, "__name__", str(node.target))


class LayerGraph:
    """The traced fp32 model (``module``, a GraphModule) and its ``layers`` in graph order."""

    def __init__(self, model: torch.nn.Module, example: tuple):
        model = copy.deepcopy(model)
        for module in model.modules():  # an in-place module would overwrite the layer before it, tap and all
            if getattr(module, "inplace", False) is True:
                module.inplace = False
        try:
            graph = _Tracer().trace(model)
        except Exception as err:
            raise UntraceableModel(f"torch.fx cannot trace {type(model).__name__}: {_first_line(err)}") from err
        self.module = fx.GraphModule(model, graph)
        self._nodes = {node.name: node for node in self.module.graph.nodes}
        try:
            ShapeProp(self.module).propagate(*example)
        except Exception as err:
            raise UntraceableModel(f"the traced {type(model).__name__} does not run on the point's inputs: "
                                   f"{_first_line(err)}") from err
        self.layers = self._layers()

    def _layers(self) -> list[Layer]:
        runs: list[tuple[str, list[fx.Node]]] = []
        for node in self.module.graph.nodes:
            if node.op in ("placeholder", "get_attr", "output"):
                continue
            scope = _scope(node)
            if runs and runs[-1][0] == scope:
                runs[-1][1].append(node)
            else:
                runs.append((scope, [node]))
        seen: dict[str, int] = {}
        layers = []
        for scope, nodes in runs:
            base = scope or nodes[0].name
            seen[base] = seen.get(base, 0) + 1
            path = base if seen[base] == 1 else f"{base}#{seen[base]}"
            inside = set(nodes)
            outputs = tuple(n.name for n in nodes if _is_tensor(n) and any(u not in inside for u in n.users))
            op = "+".join(dict.fromkeys(_op(n, self.module) for n in nodes))
            layers.append(Layer(path, op, tuple(n.name for n in nodes), outputs))
        return layers

    def node(self, name: str) -> fx.Node:
        return self._nodes[name]

    def tapped(self) -> fx.GraphModule:
        """The model returning ``(its output, *every layer's outputs in graph order)``."""
        graph = fx.Graph()
        env: dict[fx.Node, fx.Node] = {}
        result = None
        for node in self.module.graph.nodes:
            if node.op == "output":
                result = fx.map_arg(node.args[0], lambda n: env[n])
            else:
                env[node] = graph.node_copy(node, lambda n: env[n])
        taps = [env[self.node(name)] for layer in self.layers for name in layer.outputs]
        graph.output((result, *taps))
        return fx.GraphModule(self.module, graph)

    def tap_names(self) -> list[str]:
        return [name for layer in self.layers for name in layer.outputs]

    def split(self, boundary: int) -> tuple[fx.GraphModule, fx.GraphModule]:
        """``(prefix, suffix)``: the layers before ``boundary``, returning the tuple of tensors the rest needs, and the
        rest, called as ``suffix(*inputs, *prefix(*inputs))`` for the model's output."""
        before = {name for layer in self.layers[:boundary] for name in layer.nodes}
        nodes = list(self.module.graph.nodes)
        later = [n for n in nodes if n.op != "placeholder" and n.name not in before]
        crossing = [n for n in nodes if n.name in before and any(u in later for u in n.users)]
        if not all(_is_tensor(n) for n in crossing):
            raise UntraceableModel(f"a value that is not a tensor crosses layer boundary {boundary}")
        prefix, penv = fx.Graph(), {}
        suffix, senv = fx.Graph(), {}
        for node in nodes:
            if node.op == "placeholder":
                penv[node] = prefix.node_copy(node)
                senv[node] = suffix.node_copy(node)
        for node in crossing:
            senv[node] = suffix.placeholder(f"cut_{node.name}")
        for node in nodes:
            if node.op == "placeholder":
                continue
            if node.name in before or node.op == "get_attr":  # constants go to both; the unused ones are dropped
                penv[node] = prefix.node_copy(node, lambda n: penv[n])
            if node.name not in before:
                senv[node] = suffix.node_copy(node, lambda n: senv[n])
        prefix.output(tuple(penv[n] for n in crossing))
        return _pruned(fx.GraphModule(self.module, prefix)), _pruned(fx.GraphModule(self.module, suffix))


def _first_line(err: Exception) -> str:
    return f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"


def _is_tensor(node: fx.Node) -> bool:
    """Whether shape propagation found ``node`` to be one tensor."""
    return isinstance(node.meta.get("tensor_meta"), TensorMetadata)


def _pruned(module: fx.GraphModule) -> fx.GraphModule:
    module.graph.eliminate_dead_code()
    module.recompile()
    return module
