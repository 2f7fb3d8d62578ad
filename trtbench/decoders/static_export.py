"""What ``exported`` and ``aoti`` share: static-cache programs (more: docs/generate.md, "Module notes")."""

from __future__ import annotations

import json
import time
from abc import abstractmethod
from pathlib import Path
from typing import Callable, ClassVar, Optional

import numpy as np
import torch

from trtbench.core.target import Target
from trtbench.decoders.torch_model import TorchDecoder, eos_ids, greedy_loop, load_folder, torch_facts

INDEX = "programs.json"
EXAMPLE_SEQ = 2  # the example's sequence length at export (1 would specialize the dynamic dimension)


def static_cache_module(model: torch.nn.Module, batch: int, length: int) -> torch.nn.Module:
    """``model`` wrapped with a static cache of ``batch`` x ``length`` positions held as the wrapper's buffers."""
    from transformers.integrations.executorch import TorchExportableModuleWithStaticCache

    class StaticCacheModule(TorchExportableModuleWithStaticCache):
        def forward(self, input_ids: torch.Tensor, cache_position: torch.Tensor) -> torch.Tensor:
            for i, layer in enumerate(self.static_cache.layers):  # the buffers as export sees them (module doc)
                layer.keys, layer.values = getattr(self, f"key_cache_{i}"), getattr(self, f"value_cache_{i}")
                layer.cumulative_length = getattr(self, f"cumulative_length_{i}")
            return super().forward(input_ids=input_ids, cache_position=cache_position)

    model.generation_config.cache_implementation = "static"
    return StaticCacheModule(model, batch_size=batch, max_cache_len=length, device=model.device)


def export_static(model: torch.nn.Module, batch: int, length: int) -> torch.export.ExportedProgram:
    """The exported program of ``model`` with a static cache of ``batch`` x ``length``, its sequence dynamic."""
    if length < EXAMPLE_SEQ:
        raise ValueError(f"a static-cache program needs a cache of at least {EXAMPLE_SEQ} positions, not {length}")
    seq = torch.export.Dim("seq", min=1, max=length)
    example = torch.zeros((batch, EXAMPLE_SEQ), dtype=torch.int64, device=model.device)
    with torch.no_grad():
        return torch.export.export(
            static_cache_module(model, batch, length), args=(),
            kwargs={"input_ids": example, "cache_position": torch.arange(EXAMPLE_SEQ, device=model.device)},
            dynamic_shapes={"input_ids": {1: seq}, "cache_position": {0: seq}}, strict=False)


class StaticProgramSession:
    """The saved programs by (batch, cache length), each ``program(input_ids=, cache_position=)`` -> logits."""

    def __init__(self, programs: dict[tuple[int, int], Callable], eos: tuple[int, ...], facts: dict):
        self.programs, self.eos, self.facts = programs, eos, facts

    def _program(self, batch: int, length: int) -> Callable:
        if (batch, length) not in self.programs:
            built = ", ".join(f"batch {b} x cache length {n}" for b, n in sorted(self.programs))
            raise ValueError(f"{self.facts['decoder']} has no program for batch {batch} x cache length {length} "
                             f"(prompt + new tokens): its artifact was built for {built}; build it with this shape")
        return self.programs[batch, length]

    def generate(self, prompt: np.ndarray, new_tokens: int, stamp: Callable[[], None]) -> np.ndarray:
        batch, prompt_len = prompt.shape
        program = self._program(batch, prompt_len + new_tokens)
        return greedy_loop(lambda ids, positions: program(input_ids=ids, cache_position=positions)[:, -1], prompt,
                           new_tokens, stamp, self.eos)

    def logits(self, ids: np.ndarray) -> np.ndarray:
        """Teacher-forced: the whole sequence as the prefill of the program of its length."""
        program, positions = self._program(1, ids.shape[1]), torch.arange(ids.shape[1])
        with torch.inference_mode():
            return program(input_ids=torch.from_numpy(ids), cache_position=positions).float().cpu().numpy()

    def close(self) -> None:
        self.programs.clear()


class StaticExportDecoder(TorchDecoder):
    """A decoder whose artifact is a static-cache program per shape; a subclass says how one is saved and loaded."""

    save_fact: ClassVar[str]  # the fact that sums the programs' save times, e.g. "compile_s"
    builds_apart = True  # the build loads the model, exports and compiles

    def unavailable_reason(self, target: Target) -> Optional[str]:
        device = str(target.device)
        if device != "cpu":
            return (f"{self.name} builds its programs on the CPU (a program holds its build's device) and this run "
                    f"uses '{device}'")
        return super().unavailable_reason(target)

    @abstractmethod
    def save_program(self, program: torch.export.ExportedProgram, path: Path) -> None:
        """Save ``program`` as the ``.pt2`` file ``path``."""

    @abstractmethod
    def load_program(self, path: Path) -> Callable:
        """The program that :meth:`save_program` saved at ``path``, callable as the exported module."""

    def build(self, source: Path, precision: str, out_dir: Path, threads: int,
              shapes: tuple[tuple[int, int], ...], device: str) -> Path:
        if not shapes:
            raise ValueError(f"{self.name} builds a program per (batch, cache length) and was given none")
        model = load_folder(source, precision, "cpu", threads)
        artifact = out_dir / f"{self.name}-{precision}"
        artifact.mkdir(parents=True, exist_ok=True)
        programs = []
        for batch, length in sorted(set(shapes)):
            started = time.perf_counter()
            program = export_static(model, batch, length)
            exported = time.perf_counter()
            name = f"b{batch}-l{length}.pt2"
            self.save_program(program, artifact / name)
            programs.append({"batch": batch, "cache_length": length, "file": name,
                             "export_s": round(exported - started, 3),
                             self.save_fact: round(time.perf_counter() - exported, 3)})
        (artifact / INDEX).write_text(json.dumps({"decoder": self.name, "precision": precision,
                                                  "eos": list(eos_ids(model)), "programs": programs}, indent=1))
        return artifact

    def load(self, artifact: Path, device: str, threads: int) -> StaticProgramSession:
        index = json.loads((Path(artifact) / INDEX).read_text())
        torch.set_num_threads(threads)
        programs = {(p["batch"], p["cache_length"]): self.load_program(Path(artifact) / p["file"])
                    for p in index["programs"]}
        totals = {fact: round(sum(p[fact] for p in index["programs"]), 3) for fact in ("export_s", self.save_fact)}
        return StaticProgramSession(programs, tuple(index["eos"]), {
            **torch_facts(index["precision"], device), "decoder": self.name, "cache": "static (the program's buffers)",
            "programs": len(programs), **totals})
