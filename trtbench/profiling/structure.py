"""Model structure: one row per layer (FX node) with its type, output shape and parameter count."""

from __future__ import annotations

from typing import Any

import torch
from torch.fx.passes.shape_prop import ShapeProp, TensorMetadata

from trtbench.profiling.fxgraph import compute_nodes, describe_node, fx_graph_module, node_parameters


def _shapes(meta: Any) -> Any:
    """Output shape(s) from ShapeProp's metadata: a list per tensor, nested like the output."""
    if isinstance(meta, TensorMetadata):
        return list(meta.shape)
    if isinstance(meta, (list, tuple)):
        return [_shapes(m) for m in meta]
    if isinstance(meta, dict):
        return {k: _shapes(v) for k, v in meta.items()}
    return None


def layer_table(module: Any, inputs: tuple) -> dict:
    """Every compute node of the module's FX graph with its output shape and the parameters it uses."""
    gm = fx_graph_module(module)
    with torch.no_grad():
        ShapeProp(gm).propagate(*inputs)
    rows = [{**describe_node(gm, node), "output_shape": _shapes(node.meta.get("tensor_meta")),
             "parameters": node_parameters(gm, node)} for node in compute_nodes(gm)]
    return {"layers": rows, "total_parameters": sum(p.numel() for p in gm.parameters())}
