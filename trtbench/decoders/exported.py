"""``exported``: ``torch.export`` of the model's forward with a static KV cache held as the program's buffers
(transformers' ``TorchExportableModuleWithStaticCache``), one program per batch size and cache length, its
sequence length dynamic so that the same program runs the prefill and each one-token decode step. Each program
is saved as a ``.pt2`` beside the artifact and loaded back with ``torch.export.load``, so the timed program is the
saved file; ``export_s`` and ``programs`` state what that took."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from trtbench.decoders.base import register_decoder
from trtbench.decoders.torch_model import TorchDecoder, eos_ids, greedy_loop, load_model


class ExportedSession:
    """The saved programs, by (batch, cache length), exported from the model at their first request."""

    def __init__(self, model: torch.nn.Module, facts: dict, folder: Path):
        self.model, self.folder = model, folder
        self.programs: dict[tuple[int, int], torch.nn.Module] = {}
        self.facts = {**facts, "cache": "static (the program's buffers)", "export_s": 0.0, "programs": 0}

    def _program(self, batch: int, length: int, example: torch.Tensor) -> torch.nn.Module:
        if (batch, length) not in self.programs:
            from transformers.integrations.executorch import TorchExportableModuleWithStaticCache

            started = time.perf_counter()
            self.model.generation_config.cache_implementation = "static"
            wrapper = TorchExportableModuleWithStaticCache(self.model, batch_size=batch, max_cache_len=length,
                                                           device=self.model.device)
            seq = torch.export.Dim("seq", min=1, max=length)
            with torch.no_grad():
                program = torch.export.export(wrapper, args=(), kwargs={
                    "input_ids": example, "cache_position": torch.arange(example.shape[1], device=self.model.device)},
                    dynamic_shapes={"input_ids": {1: seq}, "cache_position": {0: seq}}, strict=False)
            path = self.folder / f"exported-b{batch}-l{length}.pt2"
            torch.export.save(program, str(path))
            self.programs[batch, length] = torch.export.load(str(path)).module()
            self.facts.update(export_s=round(self.facts["export_s"] + time.perf_counter() - started, 3),
                              programs=len(self.programs))
        return self.programs[batch, length]

    def generate(self, prompt: np.ndarray, new_tokens: int, stamp: Callable[[], None]) -> np.ndarray:
        batch, prompt_len = prompt.shape
        device = self.model.device
        program = self._program(batch, prompt_len + new_tokens, torch.from_numpy(prompt).to(device))

        def prefill(ids: torch.Tensor) -> torch.Tensor:
            return program(input_ids=ids.to(device), cache_position=torch.arange(prompt_len, device=device))[:, -1]

        def decode(token: torch.Tensor, position: int) -> torch.Tensor:
            return program(input_ids=token, cache_position=torch.tensor([position], device=device))[:, -1]

        return greedy_loop(prefill, decode, prompt, new_tokens, stamp, eos_ids(self.model))

    def logits(self, ids: np.ndarray) -> np.ndarray:
        """Teacher-forced: the whole sequence as the prefill of a program of its length."""
        device = self.model.device
        example = torch.from_numpy(ids).to(device)
        program = self._program(1, ids.shape[1], example)
        with torch.inference_mode():
            out = program(input_ids=example, cache_position=torch.arange(ids.shape[1], device=device))
        return out.float().cpu().numpy()

    def close(self) -> None:
        self.model = None
        self.programs.clear()


@register_decoder
class Exported(TorchDecoder):
    name = "exported"

    def load(self, artifact: Path, device: str, threads: int) -> ExportedSession:
        return ExportedSession(*load_model(artifact, device, threads), Path(artifact).parent)
