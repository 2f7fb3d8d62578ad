"""Shared save/load of the TorchScript variants, and TorchScript's deprecation (docs/backends.md)."""

from __future__ import annotations

from pathlib import Path

import torch

from trtbench.core.deprecation import Deprecation
from trtbench.core.fsutil import save_through_memory
from trtbench.variants import Artifact, Built, Variant


# the start of torch.jit's deprecation warnings ("`torch.jit.save` is deprecated. Please switch to `torch.export`.")
TORCHSCRIPT_WARNINGS = (r"`torch\.jit\.",)
TORCHSCRIPT_DEPRECATION = Deprecation("TorchScript", "torch 2.14", ("exported", "aoti"), TORCHSCRIPT_WARNINGS)


class TorchScriptVariant(Variant):
    """A variant whose built module is a ScriptModule, saved with ``torch.jit.save``."""

    deprecations = (TORCHSCRIPT_DEPRECATION,)

    def save(self, built: Built, directory: Path, stem: str) -> list[Artifact]:
        path = directory / f"{stem}.ts"
        save_through_memory(path, lambda fh: torch.jit.save(built.module, fh))
        return [Artifact(path=path, loader="torch.jit.load")]

    def load(self, artifact: Artifact, device: torch.device):
        return torch.jit.load(str(artifact.path), map_location=device)
