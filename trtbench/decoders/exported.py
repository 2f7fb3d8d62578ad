"""``exported``: ``torch.export`` of the model's forward with a static KV cache held as the program's buffers, one
program per batch size and cache length the run serves, its sequence length dynamic so that the same program runs
the prefill and each one-token decode step (:mod:`trtbench.decoders.static_export`). The build exports and saves
each program with ``torch.export.save``; the load reads those ``.pt2`` files alone with ``torch.export.load`` and
runs each as its unflattened module (the ExportedProgram's ``module()``). Each file holds the weights; once loaded,
every program's parameters are the first program's (:func:`share_parameters`), so the worker keeps one copy
(the tiny Llama of configs/tinyllama.yaml, 3 programs: 852 MiB of RSS after the load instead of 1011; eager's
worker: 768). ``export_s``, ``save_s`` and ``programs`` state what the build took."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import torch

from trtbench.decoders.base import register_decoder
from trtbench.decoders.static_export import StaticExportDecoder, StaticProgramSession


def share_parameters(modules: list[torch.nn.Module]) -> None:
    """Make every module's parameters the first module's of the same name (the modules are programs of one model),
    so that the others' copies are freed."""
    first = dict(modules[0].named_parameters())
    for module in modules[1:]:
        for name, _ in list(module.named_parameters()):
            owner, _, attribute = name.rpartition(".")
            setattr(module.get_submodule(owner), attribute, first[name])


@register_decoder
class Exported(StaticExportDecoder):
    name = "exported"
    save_fact = "save_s"

    def save_program(self, program: torch.export.ExportedProgram, path: Path) -> None:
        torch.export.save(program, str(path))

    def load_program(self, path: Path) -> Callable:
        return torch.export.load(str(path)).module()

    def load(self, artifact: Path, device: str, threads: int) -> StaticProgramSession:
        session = super().load(artifact, device, threads)
        share_parameters(list(session.programs.values()))
        session.facts["weights"] = "one copy, shared by the programs"
        return session
