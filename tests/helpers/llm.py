"""The tiny causal language model of the generate and LLM-serving tests: a 2-layer, hidden-size-64 Llama with random
weights (as a transformers config and saved with a word-level tokenizer), the generate config built on it, and a
generate + serving config served under LoadGen's token latencies."""

from __future__ import annotations

import copy

import pytest

TINY_LLAMA = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
              "num_key_value_heads": 2, "vocab_size": 512, "max_position_embeddings": 64}
_TINYGEN = {"name": "tinygen", "device": "cpu", "variants": ["eager", "exported"], "precisions": ["fp32", "int4"],
            "model": {"source": "transformers", "name": "llama", "task": "causal-lm", "kwargs": TINY_LLAMA,
                      "label": "tiny-llama"},
            "benchmark": {"threads": 1, "measure_ceiling": False},  # the triad: tests/measure/test_bandwidth.py
            "scenarios": [{"generate": {"prompt_tokens": [12], "new_tokens": [4], "batch": [1, 2],
                                        "min_requests": 3, "max_requests": 4}}]}


def generate_config(**changes) -> dict:
    data = copy.deepcopy(_TINYGEN)
    data.update(changes)
    return data


SAVED_VOCAB = 1000  # the saved model's vocabulary and its tokenizer's words


def save_tiny_llama(folder) -> None:
    """A random 2-layer Llama and a word-level tokenizer (``t3``..``t999`` plus <unk>, <s>, </s>), saved offline."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from tokenizers import Tokenizer, models, pre_tokenizers

    torch.manual_seed(0)
    config = transformers.LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2, vocab_size=SAVED_VOCAB,
                                      max_position_embeddings=256, bos_token_id=1, eos_token_id=2)
    transformers.LlamaForCausalLM(config).save_pretrained(folder)
    words = {"<unk>": 0, "<s>": 1, "</s>": 2, **{f"t{i}": i for i in range(3, SAVED_VOCAB)}}
    tokenizer = Tokenizer(models.WordLevel(words, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    transformers.PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="<unk>", bos_token="<s>",
                                         eos_token="</s>").save_pretrained(folder)


GENERATE = {"generate": {"prompt_tokens": [8, 12], "new_tokens": [4], "batch": [1], "min_requests": 3,
                         "max_requests": 3}}
# bounds no step misses; at p50 a step passes from 4 queries (none late: 0.5 ** 4 <= 1 - 0.9); the worker serves
# static batches of up to 2 queries gathered within 5 ms
SERVER = {"ttft_ms": 5000, "tpot_ms": 1000, "percentile": 0.5, "find_peak": True, "min_queries": 4,
          "min_duration_s": 0.2, "search_steps": 3, "workers": [1], "batching": {"max_batch": 2, "window_ms": 5},
          "validity": "bound"}


def llm_config(out, server=None, generate=None) -> dict:
    return generate_config(variants=["eager"], precisions=["fp32"], output={"dir": str(out)},
                           scenarios=[generate or GENERATE, {"serving": server or SERVER}])
