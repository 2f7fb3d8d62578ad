"""Getting an FX graph of a built variant, or the reason there is none."""

from __future__ import annotations

import contextlib
from typing import Any, Union

import torch
import torch.fx

from trtbench.profiling import NotSupported


def fx_graph_module(module: Any) -> torch.fx.GraphModule:
    """The module as a GraphModule: itself when it is one, else ``symbolic_trace``'s (:class:`NotSupported`)."""
    if isinstance(module, torch.fx.GraphModule):
        return module
    if isinstance(module, torch.jit.ScriptModule):
        raise NotSupported("TorchScript modules have no FX graph (profile the eager variant for per-layer data)")
    if not isinstance(module, torch.nn.Module):
        raise NotSupported(f"the built variant is a {type(module).__name__}, not an nn.Module")
    try:
        return torch.fx.symbolic_trace(module)
    # FX raises many types (TraceError, TypeError, NotImplementedError...) for untraceable code
    except Exception as err:
        raise NotSupported(f"torch.fx.symbolic_trace failed: {type(err).__name__}: {err}") from err


def node_type(gm: torch.fx.GraphModule, node: torch.fx.Node) -> str:
    """What kind of layer a node is: the leaf module's class, or the function/method name."""
    if node.op == "call_module":
        return type(gm.get_submodule(node.target)).__name__
    if node.op == "call_method":
        return f".{node.target}"
    return _callable_name(node.target)


def _callable_name(target: Union[str, Any]) -> str:
    if isinstance(target, torch._ops.OpOverload):
        return str(target)  # aten.conv2d.default
    return getattr(target, "__name__", str(target))


def describe_node(gm: torch.fx.GraphModule, node: torch.fx.Node) -> dict:
    """Name, op kind, target (module path or callable name) and layer type of a node."""
    target = node.target if isinstance(node.target, str) else _callable_name(node.target)
    return {"name": node.name, "op": node.op, "target": target, "type": node_type(gm, node)}


def node_parameters(gm: torch.fx.GraphModule, node: torch.fx.Node) -> int:
    """Parameters a node uses: its module's (call_module) or those it reads through get_attr inputs."""
    if node.op == "call_module":
        return sum(p.numel() for p in gm.get_submodule(node.target).parameters())
    count = 0
    for arg in node.all_input_nodes:
        if arg.op == "get_attr":
            # a buffer or a constant is not a parameter
            with contextlib.suppress(AttributeError):
                count += gm.get_parameter(arg.target).numel()
    return count


def compute_nodes(gm: torch.fx.GraphModule) -> list[torch.fx.Node]:
    """Nodes that do work (calls of modules, functions and methods), in execution order."""
    return [n for n in gm.graph.nodes if n.op in ("call_module", "call_function", "call_method")]
