"""The static KV cache that the ``trt`` decoder hands Torch-TensorRT (trtbench/decoders/static_cache.py, the port of
tools/llm's), run by PyTorch on the CPU: the rewritten, re-exported program of the tiny llama takes and returns
its caches, and a prefill followed by one-token steps gives eager's logits at every position, at batch 2. No
TensorRT is involved: this is the graph TensorRT compiles, proven by running it."""

from __future__ import annotations

import torch

from helpers.llm import TINY_LLAMA
from trtbench.decoders.static_cache import ATTENTION, cache_inputs, export_with_static_cache

PROMPT, LENGTH, BATCH = 5, 9, 2


def test_the_program_with_its_cache_as_inputs_and_outputs_steps_to_eagers_logits():
    from transformers import AutoModelForCausalLM, LlamaConfig

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(LlamaConfig(**TINY_LLAMA), attn_implementation="sdpa").eval()
    program = export_with_static_cache(model, BATCH, LENGTH)

    inputs = [s.arg.name for s in program.graph_signature.input_specs if s.kind.name == "USER_INPUT"]
    layers = TINY_LLAMA["num_hidden_layers"]
    assert inputs[:2] == ["input_ids", "position_ids"] and len(inputs) == 2 + 2 * layers
    assert all(name.endswith(suffix) for name, suffix in zip(inputs[2:], ["_k_input", "_v_input"] * layers))
    caches = cache_inputs(program)
    heads = TINY_LLAMA["num_attention_heads"]  # transformers repeats the key/value heads before attention
    assert all(c.shape == (BATCH, heads, LENGTH, TINY_LLAMA["hidden_size"] // heads) for c in caches)
    nodes = {n.name: n for n in program.graph.nodes}
    outputs = [nodes[s.arg.name] for s in program.graph_signature.output_specs]
    cache_nodes = [n for n in program.graph.find_nodes(op="placeholder") if n.name in inputs[2:]]
    # each output after the logits is its own cache input, written (key then value, layer by layer)
    assert [(o.target, o.args[0]) for o in outputs[1:]] == [(torch.ops.aten.index_copy.default, c) for c in cache_nodes]
    assert sum(n.target == ATTENTION for n in program.graph.nodes) == layers

    ids = torch.randint(3, TINY_LLAMA["vocab_size"], (BATCH, LENGTH))
    module = program.module()
    with torch.no_grad():
        expected = model(input_ids=ids, use_cache=False).logits
        logits, *caches = module(ids[:, :PROMPT], torch.arange(PROMPT).unsqueeze(0), *caches)
        steps = [logits]
        for position in range(PROMPT, LENGTH):
            logits, *caches = module(ids[:, position:position + 1], torch.tensor([[position]]), *caches)
            steps.append(logits)
    got = torch.cat(steps, dim=1)
    assert got.shape == expected.shape
    torch.testing.assert_close(got, expected, atol=1e-4, rtol=1e-4)
    with torch.no_grad():  # the decode steps read the cache: from empty caches, the same step differs
        empty = module(ids[:, PROMPT:PROMPT + 1], torch.tensor([[PROMPT]]), *cache_inputs(program))[0]
    assert not torch.allclose(empty, got[:, PROMPT:PROMPT + 1], atol=1e-3)
