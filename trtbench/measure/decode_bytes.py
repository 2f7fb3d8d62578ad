"""The bytes a causal LM's decode step reads: its weights as deployed at the row's precision, plus its KV cache.

A decode step at a small batch reads every weight once (whatever the batch) and the whole KV cache of every
sequence, and little else, so those bytes over the step's time are the memory bandwidth it achieved. Counted:

* weights: every matmul weight (each ``nn.Linear``'s, the LM head's included) and the other parameters (norms,
  biases); the input embedding is left out, as a step reads only its tokens' rows of it (where the LM head
  shares it, it is the LM head's weight and counted). fp32: 4 bytes each, bf16: 2. Weight-only int8/int4 are
  counted as deployed, approximately: each matmul weight at 1 or 0.5 byte plus a 4-byte scale per block of
  :data:`QUANT_BLOCK` weights (onnxruntime-genai's builder: symmetric, block 32; NNCF's int4 uses groups of 32,
  its int8 one scale and zero point per channel, and it keeps the LM head at 8 bits), the other parameters at
  fp32;
* the KV cache: keys and values of every layer, ``2 x layers x kv_heads x head_dim x positions x batch`` elements
  of 2 bytes at bf16 (and fp16), else 4 (weight-only int8/int4 keep an fp32 cache), at a step's KV position. Decode step
  ``i`` (``i`` from 1 to ``new - 1``, making token ``i + 1`` of ``new``) attends over ``prompt + i`` positions, its
  own included, so the mean over a request's steps is ``prompt + new / 2`` positions.
"""

from __future__ import annotations

import torch

QUANT_BLOCK = 32
SCALE_BYTES = 4
QUANT_WEIGHT_BYTES = {"int8": 1.0, "int4": 0.5}  # bytes per matmul weight of a weight-only quantized model
FLOAT_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2}


def weight_counts(model: torch.nn.Module) -> dict:
    """Parameters of ``model`` a decode step reads: ``matmul`` (every ``nn.Linear`` weight) and ``other`` (the
    rest but the input embedding, which a step reads a row of per token: ``embedding``)."""
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
    """The bytes a decode step reads on average over a request of ``shape`` (prompt tokens, new tokens, batch):
    its weights and its KV cache at the mean decode position."""
    prompt, new, batch = shape
    position = prompt + new / 2
    weights, kv = weight_bytes(counts, precision), kv_cache_bytes(config, batch, position, precision)
    return {"weight_bytes": weights, "kv_bytes": kv, "mean_position": position, "bytes": weights + kv}
