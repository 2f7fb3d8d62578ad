"""Shared save/load for variants that produce TorchScript modules."""

from __future__ import annotations

from pathlib import Path

import torch

from trtbench.core.fsutil import save_through_memory
from trtbench.variants import Artifact, Built, Variant


class TorchScriptVariant(Variant):
    """A variant whose built module is a ScriptModule, saved with ``torch.jit.save``."""

    def save(self, built: Built, directory: Path, stem: str) -> list[Artifact]:
        path = directory / f"{stem}.ts"
        save_through_memory(path, lambda fh: torch.jit.save(built.module, fh))
        return [Artifact(path=path, loader="torch.jit.load")]

    def load(self, artifact: Artifact, device: torch.device):
        return torch.jit.load(str(artifact.path), map_location=device)
