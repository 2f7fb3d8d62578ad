"""``eager``: the transformers model as it is, with a dynamic KV cache (``DynamicCache``), one forward per step."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import numpy as np
import torch

from trtbench.decoders.base import register_decoder
from trtbench.decoders.torch_model import TorchDecoder, eos_ids, greedy_loop, load_model, teacher_forced_logits


class EagerSession:
    """The model in eager mode with a fresh dynamic cache per request."""

    def __init__(self, model: torch.nn.Module, facts: dict):
        self.model, self.facts = model, {**facts, "cache": "dynamic (DynamicCache)"}

    def generate(self, prompt: np.ndarray, new_tokens: int, stamp: Callable[[], None]) -> np.ndarray:
        from transformers import DynamicCache

        cache = DynamicCache(config=self.model.config)
        device = next(self.model.parameters()).device

        def step(ids: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:  # the dynamic cache counts positions
            return self.model(input_ids=ids.to(device), cache=cache, use_cache=True, logits_to_keep=1).logits[:, -1]

        return greedy_loop(step, prompt, new_tokens, stamp, eos_ids(self.model))

    def logits(self, ids: np.ndarray) -> np.ndarray:
        return teacher_forced_logits(self.model, ids)

    def close(self) -> None:
        self.model = None


@register_decoder
class Eager(TorchDecoder):
    name = "eager"

    def load(self, artifact: Path, device: str, threads: int) -> EagerSession:
        return EagerSession(*load_model(artifact, device, threads))
