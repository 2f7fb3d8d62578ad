"""``onnx``: the ``exported`` program as ONNX, a build step (not timed) that ONNX Runtime and OpenVINO start from."""

from __future__ import annotations

import importlib.util
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from trtbench.core.target import Target
from trtbench.variants import Built, BuildContext, Variant, register


@dataclass
class OnnxModel:
    """An exported ONNX model: the ``torch.onnx.ONNXProgram`` and the file it was written to."""

    program: Any  # torch.onnx.ONNXProgram
    path: Path
    workdir: tempfile.TemporaryDirectory  # holds ``path``; removed when the build is dropped

    @property
    def input_names(self) -> list[str]:
        return [value.name for value in self.program.model.graph.inputs]

    def save(self, destination: Path) -> list[Path]:
        """Write the model to ``destination``; the other files it needs there (weights beyond ONNX's 2 GB limit)."""
        before = set(destination.parent.iterdir())
        self.program.save(str(destination))
        return sorted(set(destination.parent.iterdir()) - before - {destination})


@register
class Onnx(Variant):
    name = "onnx"
    description = "torch.onnx.export(dynamo=True) of the exported program, for ort, ort_cuda, ort_trt and openvino"
    depends_on = "exported"
    timed = False

    def unavailable_reason(self, target: Target) -> str | None:
        missing = [name for name in ("onnx", "onnxscript") if importlib.util.find_spec(name) is None]
        return f"{' and '.join(missing)} not installed (pip install onnx onnxscript)" if missing else None

    def build(self, model, ctx: BuildContext) -> Built:
        program = ctx.built[self.depends_on].state
        start = time.perf_counter()
        onnx_program = torch.onnx.export(program, dynamo=True, verbose=False)
        workdir = tempfile.TemporaryDirectory(prefix="trtbench-onnx-")
        onnx_model = OnnxModel(onnx_program, Path(workdir.name) / "model.onnx", workdir)
        onnx_model.save(onnx_model.path)
        graph = onnx_program.model.graph
        info = {"export_s": time.perf_counter() - start, "opset": onnx_program.model.opset_imports.get(""),
                "inputs": {value.name: str(value.shape) for value in graph.inputs},
                "outputs": [value.name for value in graph.outputs]}
        return Built(None, info, state=onnx_model)
