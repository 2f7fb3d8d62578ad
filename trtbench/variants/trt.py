"""Torch-TensorRT, dynamo frontend: ``torch.export`` of the eager model, compiled with ``ir="dynamo"``.

The export uses the example inputs at the opt shape (a batch of 1 would be specialised
away) and the config's dynamic dims; the engine is built for the config's min/opt/max.
Saved twice: TorchScript (``torch_tensorrt.save(..., output_format="torchscript")``) and
ExportedProgram (``output_format="exported_program"``); both need ``import torch_tensorrt``
before loading.
"""

from __future__ import annotations

from pathlib import Path

import torch

from trtbench.variants import Artifact, Built, BuildContext, Variant, register
from trtbench.variants.exported import dynamic_shapes
from trtbench.variants.trt_common import (DYNAMO, DynamoOptions, RangeGuard, build_info, compile_kwargs,
                                          fx_segments, import_torch_tensorrt, load_artifact, trt_inputs,
                                          unavailable_reason)


@register
class TensorRT(Variant):
    name = "trt"
    description = "Torch-TensorRT dynamo frontend (torch.export at opt, engine for min..max), guarded input ranges"
    Options = DynamoOptions

    def unavailable_reason(self, device: torch.device, precision: str) -> str | None:
        return unavailable_reason(device)

    def build(self, model, ctx: BuildContext) -> Built:
        trt = import_torch_tensorrt()
        options = ctx.options or DynamoOptions()
        program = torch.export.export(model, ctx.example_inputs, dynamic_shapes=dynamic_shapes(ctx.input_specs))
        kwargs = compile_kwargs(trt, DYNAMO, options, ctx.dtype, ctx.device)
        specs = trt_inputs(trt, ctx.input_specs, ctx.example_inputs)
        compiled = trt.compile(program, ir="dynamo", inputs=specs, **kwargs)
        info = build_info(trt, DYNAMO, kwargs, ctx, fx_segments(compiled))
        state = {"compiled": compiled, "trt_inputs": specs, "example_inputs": ctx.example_inputs}
        return Built(RangeGuard(compiled, ctx.input_specs), info, state=state)

    def save(self, built: Built, directory: Path, stem: str) -> list[Artifact]:
        trt = import_torch_tensorrt()
        compiled = built.state["compiled"]
        ts_path, ep_path = directory / f"{stem}.ts", directory / f"{stem}.pt2"
        # torchscript: torch.jit.trace of the GraphModule, so it takes example tensors.
        trt.save(compiled, str(ts_path), output_format="torchscript", inputs=list(built.state["example_inputs"]))
        # exported_program: dynamic dims are inferred from the Input min/opt/max specs.
        trt.save(compiled, str(ep_path), output_format="exported_program", inputs=built.state["trt_inputs"])
        return [Artifact(path=ts_path, loader="torch.jit.load", imports=["torch_tensorrt"]),
                Artifact(path=ep_path, loader="torch.export.load", imports=["torch_tensorrt"])]

    def load(self, artifact: Artifact, device: torch.device):
        return load_artifact(artifact, device)
