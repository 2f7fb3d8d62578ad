"""``exported``: ``torch.export`` of the model's forward with a static KV cache held as the program's buffers, one
program per batch size and cache length the run serves, its sequence length dynamic so that the same program runs
the prefill and each one-token decode step (:mod:`trtbench.decoders.static_export`). The build exports and saves
each program with ``torch.export.save``; the load reads those ``.pt2`` files alone with ``torch.export.load`` and
runs each as its unflattened module (the ExportedProgram's ``module()``). ``export_s``, ``save_s`` and ``programs``
state what the build took."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import torch

from trtbench.decoders.base import register_decoder
from trtbench.decoders.static_export import StaticExportDecoder


@register_decoder
class Exported(StaticExportDecoder):
    name = "exported"
    save_fact = "save_s"

    def save_program(self, program: torch.export.ExportedProgram, path: Path) -> None:
        torch.export.save(program, str(path))

    def load_program(self, path: Path) -> Callable:
        return torch.export.load(str(path)).module()
