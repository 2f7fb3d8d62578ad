"""AOTInductor: the ``exported`` program (its dynamic dims kept) compiled ahead of time into a ``.pt2`` package."""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import torch

from trtbench.core.errors import UserInputError
from trtbench.core.precision import is_quantized
from trtbench.core.schema import join, suggest
from trtbench.core.target import Target
from trtbench.variants import Artifact, Built, BuildContext, Variant, register

# the newest torch whose aoti_load_package crashed the timing worker on a GPU (docs/backends.md, Options)
CUDA_LOAD_CRASHED = (2, 11)


def cuda_load_crash(device: torch.device, version: str) -> str | None:
    """Why aoti is skipped on ``device`` with torch ``version``: its package load crashed there; None elsewhere."""
    from torch.torch_version import Version

    if device.type != "cuda" or Version(version).release[:2] > CUDA_LOAD_CRASHED:
        return None
    return (f"aoti_load_package crashed the timing worker with SIGSEGV on CUDA with torch 2.11.0+cu130 (an H100) and "
            f"this run has torch {version}; use torch 2.12 or later (trtbench pins 2.14.1), or run "
            f"scripts/aoti_cuda_repro.py here to see whether it crashes on this machine")


@dataclass
class AotiOptions:
    """``inductor_configs``: Inductor settings for the compile (names as in ``torch._inductor.config``)."""

    inductor_configs: dict = field(default_factory=dict)

    def validate(self, path: str) -> None:
        import torch._inductor.config

        known = torch._inductor.config.get_config_copy()
        for key in self.inductor_configs:
            if key not in known:
                raise UserInputError(join(join(path, "inductor_configs"), key), "not an Inductor config setting",
                                     suggest(key, known) or "see torch._inductor.config for the names")


@register
class Aoti(Variant):
    name = "aoti"
    description = ("AOTInductor package (.pt2) compiled from the exported program, dynamic dims kept "
                   "(int8: PT2E via torchao, packaged with freezing; static shapes)")
    Options = AotiOptions
    depends_on = "exported"
    quantizes = True  # INT8: torchao's PT2E x86 quantizer, packaged with Inductor's int8 kernels

    def unavailable_reason(self, target: Target) -> str | None:
        from trtbench.variants.pt2e_build import pt2e_unavailable

        return pt2e_unavailable(target) or cuda_load_crash(target.device, torch.__version__)

    def build(self, model, ctx: BuildContext) -> Built:
        from torch._inductor import aoti_compile_and_package, aoti_load_package

        options = self.options_of(ctx)
        if is_quantized(ctx.precision):
            return self._build_int8(model, ctx, options)
        program = ctx.built[self.depends_on].state
        workdir = tempfile.TemporaryDirectory(prefix="trtbench-aoti-")  # removed when the build is dropped
        package = aoti_compile_and_package(program, package_path=str(Path(workdir.name) / "model.pt2"),
                                           inductor_configs=dict(options.inductor_configs) or None)
        info = {"inductor_configs": dict(options.inductor_configs), "package_bytes": Path(package).stat().st_size}
        state = {"package": package, "workdir": workdir, "outputs": ctx.built[self.depends_on].info["outputs"]}
        return Built(aoti_load_package(package), info, state=state)

    def _build_int8(self, model, ctx: BuildContext, options: AotiOptions) -> Built:
        """The PT2E-quantized graph packaged by AOTInductor with freezing, for static input shapes only."""
        from torch._inductor import aoti_load_package

        from trtbench.quantize.fallback import judged
        from trtbench.quantize.common import QuantizationUnavailable
        from trtbench.quantize.pt2e import INDUCTOR_OPTIONS, aoti_int8_unavailable, aoti_package_pt2e
        from trtbench.variants.pt2e_build import quantize_model

        if options.inductor_configs:
            raise ValueError("aoti at int8 packages with Inductor's freezing (its int8 kernels need it) and no "
                             "other settings: drop aoti's inductor_configs, or list aoti at fp32 only")
        reason = aoti_int8_unavailable(ctx.input_specs)
        if reason:
            raise QuantizationUnavailable(reason)

        int8 = quantize_model(model, ctx)
        workdir = tempfile.TemporaryDirectory(prefix="trtbench-aoti-int8-")  # removed when the build is dropped
        package = aoti_package_pt2e(int8.graph, ctx.example_inputs, Path(workdir.name) / "model.pt2")
        loaded = aoti_load_package(str(package))
        info = {"inductor_configs": dict(INDUCTOR_OPTIONS), "package_bytes": Path(package).stat().st_size,
                **judged(loaded, int8.quantized, ctx.int8, "the AOTInductor int8 package")}
        return Built(loaded, info,
                     state={"package": package, "workdir": workdir, "outputs": int8.outputs, "int8": int8})

    def save(self, built: Built, directory: Path, stem: str) -> list[Artifact]:
        path = directory / f"{stem}.pt2"
        shutil.copyfile(built.state["package"], path)
        return [Artifact(path=path, loader="aoti_load_package", outputs=built.state["outputs"])]

    def load(self, artifact: Artifact, device: torch.device):
        from torch._inductor import aoti_load_package

        return aoti_load_package(str(artifact.path))
