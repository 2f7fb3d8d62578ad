"""``aoti``: ``exported``'s static-cache programs compiled by AOTInductor, a ``.pt2`` package per shape."""

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
