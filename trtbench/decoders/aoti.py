"""``aoti``: the static-cache program of ``exported`` (:mod:`trtbench.decoders.static_export`), compiled ahead of
time by AOTInductor into a shared library per batch size and cache length, packaged as a ``.pt2``
(``torch._inductor.aoti_compile_and_package``) and loaded with ``torch._inductor.aoti_load_package``, so that no
Python graph runs: each call is one call into the compiled model. The cache stays the program's buffers,
updated in place by the compiled kernels across calls (the teacher-forced logits and greedy tokens match eager's).
``compile_s`` states the AOTInductor compile (with the C++ compile) of all programs, ``export_s`` their export."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import torch

from trtbench.decoders.base import register_decoder
from trtbench.decoders.static_export import StaticExportDecoder


@register_decoder
class Aoti(StaticExportDecoder):
    name = "aoti"
    save_fact = "compile_s"

    def save_program(self, program: torch.export.ExportedProgram, path: Path) -> None:
        from torch._inductor import aoti_compile_and_package

        aoti_compile_and_package(program, package_path=str(path))

    def load_program(self, path: Path) -> Callable:
        from torch._inductor import aoti_load_package

        return aoti_load_package(str(path))
