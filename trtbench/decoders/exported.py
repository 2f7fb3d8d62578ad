"""``exported``: the static-cache programs of :mod:`trtbench.decoders.static_export`, saved by ``torch.export``."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import torch

from trtbench.decoders.base import register_decoder
from trtbench.decoders.static_export import StaticExportDecoder, StaticProgramSession


def share_parameters(modules: list[torch.nn.Module]) -> None:
    """Make every module's parameters the first module's of the same name, so that the others' copies are freed."""
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
