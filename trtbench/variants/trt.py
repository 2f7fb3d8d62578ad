"""Torch-TensorRT, dynamo frontend: ``torch.export`` of the eager model, compiled with ``ir="dynamo"``.

The export uses the example inputs at the opt shape (a batch of 1 would be specialised
away) and the config's dynamic dims; the engine is built for the config's min/opt/max.
Saved twice: TorchScript (``torch_tensorrt.save(..., output_format="torchscript")``, a trace
with the opt-shape example tensors) and ExportedProgram (``output_format="exported_program"``,
a re-export given the same ``dynamic_shapes`` as the build: without them ``save`` would name
every dynamic dim of an unnamed ``Input`` "_0", and two inputs with different ranges would
clash); both need ``import torch_tensorrt`` before loading.
"""

from __future__ import annotations

from pathlib import Path

import torch

from trtbench.variants import Artifact, Built, BuildContext, register
from trtbench.variants.exported import dynamic_shapes
from trtbench.variants.trt_common import (DYNAMO, DynamoOptions, RangeGuard, TensorRTVariant, build_info,
                                          compile_kwargs, fx_segments, import_torch_tensorrt, inference_copy,
                                          trt_inputs, unavailable_reason)


@register
class TensorRT(TensorRTVariant):
    name = "trt"
    description = "Torch-TensorRT dynamo frontend (torch.export at opt, engine for min..max), guarded input ranges"
    Options = DynamoOptions
    exports_at_opt = True

    def unavailable_reason(self, device: torch.device, precision: str) -> str | None:
        return unavailable_reason(device)

    def build(self, model, ctx: BuildContext) -> Built:
        trt = import_torch_tensorrt()
        options = ctx.options or DynamoOptions()
        program = torch.export.export(inference_copy(model), ctx.example_inputs,
                                      dynamic_shapes=dynamic_shapes(ctx.input_specs))
        kwargs = compile_kwargs(trt, DYNAMO, options, ctx.dtype, ctx.device)
        specs = trt_inputs(trt, ctx.input_specs, ctx.example_inputs)
        compiled = trt.compile(program, ir="dynamo", inputs=specs, **kwargs)
        info = build_info(trt, DYNAMO, kwargs, ctx, fx_segments(compiled))
        state = {"compiled": compiled, "input_specs": ctx.input_specs, "example_inputs": ctx.example_inputs}
        return Built(RangeGuard(compiled, ctx.input_specs), info, state=state)

    def save(self, built: Built, directory: Path, stem: str) -> list[Artifact]:
        trt = import_torch_tensorrt()
        compiled = built.state["compiled"]
        ts_path, ep_path = directory / f"{stem}.ts", directory / f"{stem}.pt2"
        examples = list(built.state["example_inputs"])
        trt.save(compiled, str(ts_path), output_format="torchscript", arg_inputs=examples)
        trt.save(compiled, str(ep_path), output_format="exported_program", arg_inputs=examples,
                 dynamic_shapes=dynamic_shapes(built.state["input_specs"]))
        return [Artifact(path=ts_path, loader="torch.jit.load", imports=["torch_tensorrt"]),
                Artifact(path=ep_path, loader="torch.export.load", imports=["torch_tensorrt"])]
