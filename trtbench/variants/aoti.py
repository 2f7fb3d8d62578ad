"""AOTInductor: the ``exported`` program compiled ahead of time into a ``.pt2`` package.

``torch._inductor.aoti_compile_and_package`` compiles the ExportedProgram (with the config's
dynamic dims, which the export kept) into a shared library packaged with its weights; a
deployment loads it with ``torch._inductor.aoti_load_package`` (no Python model code needed).
The package is built into a temporary directory, loaded from there to be timed, and copied
into the artifacts when saved.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import torch

from trtbench.errors import UserInputError
from trtbench.schema import join, suggest
from trtbench.variants import Artifact, Built, BuildContext, Variant, register


@dataclass
class AotiOptions:
    """``inductor_configs``: Inductor settings for the compile, e.g. ``{max_autotune: true}`` or
    ``{freezing: true}`` (names as in ``torch._inductor.config``, dotted for nested ones)."""

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
    description = "AOTInductor package (.pt2) compiled from the exported program, dynamic dims kept"
    Options = AotiOptions
    depends_on = "exported"

    def build(self, model, ctx: BuildContext) -> Built:
        from torch._inductor import aoti_compile_and_package, aoti_load_package

        options = ctx.options or AotiOptions()
        program = ctx.built[self.depends_on].state
        workdir = tempfile.TemporaryDirectory(prefix="trtbench-aoti-")  # removed when the build is dropped
        package = aoti_compile_and_package(program, package_path=str(Path(workdir.name) / "model.pt2"),
                                           inductor_configs=dict(options.inductor_configs) or None)
        info = {"inductor_configs": dict(options.inductor_configs), "package_bytes": Path(package).stat().st_size}
        state = {"package": package, "workdir": workdir, "outputs": ctx.built[self.depends_on].info["outputs"]}
        return Built(aoti_load_package(package), info, state=state)

    def save(self, built: Built, directory: Path, stem: str) -> list[Artifact]:
        path = directory / f"{stem}.pt2"
        shutil.copyfile(built.state["package"], path)
        return [Artifact(path=path, loader="aoti_load_package", outputs=built.state["outputs"])]

    def load(self, artifact: Artifact, device: torch.device):
        from torch._inductor import aoti_load_package

        return aoti_load_package(str(artifact.path))
