"""The bytes a causal LM's decode step reads: its weights at the row's precision and its KV cache (docs/generate.md)."""

from __future__ import annotations

import torch

QUANT_BLOCK = 32
SCALE_BYTES = 4
QUANT_WEIGHT_BYTES = {"int8": 1.0, "int4": 0.5}  # bytes per matmul weight of a weight-only quantized model
FLOAT_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2}


def weight_counts(model: torch.nn.Module) -> dict:
    """Parameters a decode step reads: ``matmul`` (``nn.Linear`` weights), ``other``, and the input ``embedding``."""
    linear = {id(m.weight): m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear)}
    embedding = model.get_input_embeddings().weight
    params = {id(p): p.numel() for p in model.parameters()}
    other = sum(n for key, n in params.items() if key not in linear and key != id(embedding))
    return {"matmul": sum(linear.values()), "other": other,
            "embedding": 0 if id(embedding) in linear else embedding.numel()}


def weight_bytes(counts: dict, precision: str) -> float:
    """Bytes of the weights a step reads at ``precision`` (:func:`weight_counts`; see the module docstring)."""
    if precision in QUANT_WEIGHT_BYTES:
        per_weight = QUANT_WEIGHT_BYTES[precision] + SCALE_BYTES / QUANT_BLOCK
        return counts["matmul"] * per_weight + counts["other"] * FLOAT_BYTES["fp32"]
    return (counts["matmul"] + counts["other"]) * FLOAT_BYTES[precision]


def kv_cache_bytes(config, batch: int, positions: float, precision: str) -> float:
    """Bytes of the KV cache of ``batch`` sequences at ``positions`` each, for a transformers ``config``."""
    heads = getattr(config, "num_key_value_heads", None) or config.num_attention_heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    element = FLOAT_BYTES.get(precision, FLOAT_BYTES["fp32"])  # weight-only int8/int4 keep an fp32 cache
    return 2 * config.num_hidden_layers * heads * head_dim * positions * batch * element


def decode_step_bytes(counts: dict, config, shape: tuple[int, int, int], precision: str) -> dict:
    """The bytes a decode step of a request of ``shape`` reads: weights and mean-position KV cache."""
    prompt, new, batch = shape
    position = prompt + new / 2
    weights, kv = weight_bytes(counts, precision), kv_cache_bytes(config, batch, position, precision)
    return {"weight_bytes": weights, "kv_bytes": kv, "mean_position": position, "bytes": weights + kv}
