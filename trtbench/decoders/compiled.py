"""``compiled``: a static KV cache (``StaticCache``) with the model's forward under ``torch.compile``."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from trtbench.decoders.base import register_decoder
from trtbench.decoders.torch_model import TorchDecoder, eos_ids, greedy_loop, load_model


def _graphs() -> int:
    from torch._dynamo.utils import counters

    return int(counters["stats"]["unique_graphs"])


class CompiledSession:
    """The compiled forward with one static cache per (batch, length), reset between requests."""

    def __init__(self, model: torch.nn.Module, facts: dict):
        self.model = model
        self.forward = torch.compile(model.forward, dynamic=False)
        self.caches: dict[tuple[int, int], object] = {}
        self.shapes: set[tuple] = set()  # (what, batch, prompt length, length) of the calls made so far
        self.facts = {**facts, "cache": "static (StaticCache)", "compile_s": 0.0, "compiled_graphs": _graphs(),
                      "recompiles": 0}

    def _account(self, shape: tuple, graphs: int, started: float) -> None:
        """After a call of ``shape`` that compiled: its time is compile time, a recompile where it had run before."""
        if _graphs() > graphs:
            self.facts.update(compile_s=round(self.facts["compile_s"] + time.perf_counter() - started, 3),
                              compiled_graphs=_graphs(), recompiles=self.facts["recompiles"] + (shape in self.shapes))
        self.shapes.add(shape)

    def _cache(self, batch: int, length: int):
        """A static cache for ``batch`` x ``length``, initialized by an eager call (else the prefill compiles twice)."""
        from transformers import StaticCache

        if (batch, length) not in self.caches:
            cache = StaticCache(config=self.model.config, max_cache_len=length)
            with torch.inference_mode():
                self.model(input_ids=torch.zeros((batch, 1), dtype=torch.int64, device=self.model.device),
                           cache=cache, cache_position=torch.arange(1, device=self.model.device))
            self.caches[batch, length] = cache
        cache = self.caches[batch, length]
        with torch.inference_mode():  # its tensors are inference tensors
            cache.reset()
        return cache

    def generate(self, prompt: np.ndarray, new_tokens: int, stamp: Callable[[], None]) -> np.ndarray:
        batch, prompt_len = prompt.shape
        cache, device = self._cache(batch, prompt_len + new_tokens), self.model.device
        graphs, started = _graphs(), time.perf_counter()

        def step(ids: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
            return self.forward(input_ids=ids.to(device), cache=cache, logits_to_keep=1,
                                cache_position=positions.to(device)).logits[:, -1]

        tokens = greedy_loop(step, prompt, new_tokens, stamp, eos_ids(self.model))
        self._account(("generate", batch, prompt_len, prompt_len + new_tokens), graphs, started)
        return tokens

    def logits(self, ids: np.ndarray) -> np.ndarray:
        """Teacher-forced through the compiled forward: the prefill of the whole sequence into a static cache."""
        cache, device = self._cache(1, ids.shape[1]), self.model.device
        graphs, started = _graphs(), time.perf_counter()
        with torch.inference_mode():
            out = self.forward(input_ids=torch.from_numpy(ids).to(device), cache=cache,
                               cache_position=torch.arange(ids.shape[1], device=device))
        self._account(("logits", 1, ids.shape[1], ids.shape[1]), graphs, started)
        return out.logits.float().cpu().numpy()

    def close(self) -> None:
        self.model = self.forward = None
        self.caches.clear()


@register_decoder
class Compiled(TorchDecoder):
    name = "compiled"

    def load(self, artifact: Path, device: str, threads: int) -> CompiledSession:
        return CompiledSession(*load_model(artifact, device, threads))
