"""A causal LM's static KV cache as graph inputs and outputs (more: docs/generate.md, "Module notes")."""

from __future__ import annotations

from typing import Optional

import torch
from torch.fx import GraphModule, Node

ATTENTION = torch.ops.aten.scaled_dot_product_attention.default
CACHE_DIM = 2  # (batch, heads, positions, head_dim): the positions axis of a key or value cache


class LogitsModel(torch.nn.Module):
    """A causal LM as ``tools/llm`` exports it: ``(input_ids, position_ids) -> logits``, no cache of its own."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor, position_ids: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=input_ids, position_ids=position_ids, use_cache=False).logits


def attention_nodes(gm: GraphModule) -> list[Node]:
    """The attention calls of the graph, in order (``get_kv_nodes`` reads their key and value arguments)."""
    return [node for node in gm.graph.nodes if node.op == "call_function" and node.target == ATTENTION]


def add_graph_input(gm: GraphModule, name: str, val: Optional[torch.Tensor] = None) -> Node:
    """A new last positional input of ``gm``, its input spec and fake ``val`` set (``cache_utils._add_graph_input``)."""
    from torch._export.utils import _detect_fake_mode_from_gm
    from torch.fx.passes.shape_prop import _extract_tensor_metadata
    from torch.utils._pytree import tree_structure

    graph = gm.graph
    info = graph._codegen.pytree_info
    if info.in_spec.child(1).num_children:
        raise ValueError(f"the graph takes keyword inputs ({info.in_spec.child(1)}); export it with positional ones")
    with graph.inserting_after(graph.find_nodes(op="placeholder", sort=True)[-1]):
        node = graph.placeholder(name)
    inputs = graph.find_nodes(op="placeholder", sort=True)
    graph._codegen.pytree_info = info._replace(orig_args=[*info.orig_args, f"arg_{name}"],
                                               in_spec=tree_structure((tuple(range(len(inputs))), {})))
    fake_mode = _detect_fake_mode_from_gm(gm)
    if fake_mode is not None and val is not None:
        fake = fake_mode.from_tensor(val, static_shapes=True)
        node.meta["val"], node.meta["tensor_meta"] = fake, _extract_tensor_metadata(fake)
    return node


def add_cache_inputs(gm: GraphModule, attention: list[Node], length: int) -> list[tuple[Node, Node]]:
    """One (key, value) pair of cache inputs per attention call, ``length`` positions long (``add_kv_cache_inputs``)."""
    def cache_input(tensor: Node, suffix: str) -> Node:
        fake = tensor.meta["val"]
        shape = [length if dim == CACHE_DIM else int(size) for dim, size in enumerate(fake.shape)]
        return add_graph_input(gm, tensor.name + suffix, torch.zeros(shape, dtype=fake.dtype, device=fake.device))

    return [(cache_input(node.args[1], "_k_input"), cache_input(node.args[2], "_v_input")) for node in attention]


def _call(gm: GraphModule, target, *args, **kwargs) -> Node:
    return gm.graph.call_function(target, args, kwargs)


def insert_cache_updates(gm: GraphModule, attention: list[Node], caches: list[tuple[Node, Node]],
                         length: int) -> list[Node]:
    """Each attention call made over its caches with its step written in; the updated caches, key then value each."""
    position_ids = gm.graph.find_nodes(op="placeholder", sort=True)[1]
    device = attention[0].args[0].meta["val"].device
    updated = []
    with gm.graph.inserting_before(attention[0]):
        positions = _call(gm, torch.ops.aten.select.int, position_ids, 0, 0)
        cache_positions = _call(gm, torch.ops.aten.arange.start_step, 0, length, 1, dtype=torch.int64, device=device)
        mask = _call(gm, torch.ops.aten.le.Tensor, _call(gm, torch.ops.aten.unsqueeze.default, cache_positions, 0),
                     _call(gm, torch.ops.aten.unsqueeze.default, positions, 1))
    for node, (key_cache, value_cache) in zip(attention, caches):
        query, key, value = node.args[:3]
        with gm.graph.inserting_before(node):
            new_key = _call(gm, torch.ops.aten.index_copy.default, key_cache, CACHE_DIM, positions, key)
            new_value = _call(gm, torch.ops.aten.index_copy.default, value_cache, CACHE_DIM, positions, value)
        new_key.meta.update(key_cache.meta)
        new_value.meta.update(value_cache.meta)
        node.args = (query, new_key, new_value, mask, 0.0, False)
        updated += [new_key, new_value]
    return updated


def add_cache_outputs(gm: GraphModule, updated: list[Node]) -> None:
    """The graph's outputs become its logits followed by the updated caches, one flat tuple (``add_kv_as_outputs``)."""
    from torch.utils._pytree import tree_structure

    output = next(node for node in gm.graph.nodes if node.op == "output")
    outputs = output.args[0] if isinstance(output.args[0], (tuple, list)) else (output.args[0],)
    with gm.graph.inserting_before(output):
        gm.graph.output(tuple(outputs) + tuple(updated))
    gm.graph.erase_node(output)
    out_spec = tree_structure(tuple(range(len(outputs) + len(updated))))
    gm.graph._codegen.pytree_info = gm.graph._codegen.pytree_info._replace(out_spec=out_spec)
    gm._out_spec = out_spec


def insert_static_cache(gm: GraphModule, length: int) -> GraphModule:
    """``gm`` as ``(input_ids, position_ids, k_0, v_0, ...) -> (logits, k_0, v_0, ...)`` with ``length`` positions."""
    attention = attention_nodes(gm)
    if not attention:
        raise ValueError("the exported model has no scaled_dot_product_attention call to cache: load it with "
                         "attn_implementation='sdpa'")
    caches = add_cache_inputs(gm, attention, length)
    add_cache_outputs(gm, insert_cache_updates(gm, attention, caches, length))
    for node in gm.graph.find_nodes(op="call_function", target=torch.ops.aten._assert_tensor_metadata.default):
        gm.graph.erase_node(node)  # as torch_tensorrt's remove_assert_nodes pass does; they keep the old mask alive
    gm.graph.eliminate_dead_code()  # the model's own attention mask, now unused
    gm.graph.lint()
    gm.recompile()
    return gm


def cache_inputs(program: torch.export.ExportedProgram) -> list[torch.Tensor]:
    """Zeroed caches for the program :func:`export_with_static_cache` returned, in its input order."""
    placeholders = [spec for spec in program.graph_signature.input_specs if spec.kind.name == "USER_INPUT"][2:]
    values = {node.name: node.meta["val"] for node in program.graph.find_nodes(op="placeholder")}
    return [torch.zeros(values[spec.arg.name].shape, dtype=values[spec.arg.name].dtype,
                        device=values[spec.arg.name].device) for spec in placeholders]


def export_with_static_cache(model: torch.nn.Module, batch: int, length: int) -> torch.export.ExportedProgram:
    """``model`` exported for ``batch`` sequences with a static KV cache of ``length`` positions, steps dynamic."""
    device = next(model.parameters()).device
    example = 2
    ids = torch.zeros((batch, example), dtype=torch.int64, device=device)
    positions = torch.arange(example, device=device).unsqueeze(0)
    seq = torch.export.Dim("seq_len", min=1, max=length)
    with torch.no_grad():
        program = torch.export.export(LogitsModel(model).eval(), args=(ids, positions),
                                      dynamic_shapes=({1: seq}, {1: seq}), strict=False)
        rewritten = insert_static_cache(program.module(), length)
        caches = [torch.zeros(p.meta["val"].shape, dtype=p.meta["val"].dtype, device=device)
                  for p in rewritten.graph.find_nodes(op="placeholder", sort=True)[2:]]
        return torch.export.export(rewritten, args=(ids, positions, *caches),
                                   dynamic_shapes=({1: seq}, {1: seq}, *[None] * len(caches)), strict=False)
