"""Torch-TensorRT's dynamo frontend (more: docs/tensorrt.md, "Module notes")."""

from __future__ import annotations

from pathlib import Path

import torch

from trtbench.core.deprecation import Deprecation
from trtbench.core.precision import is_quantized
from trtbench.core.target import Target
from trtbench.variants import Artifact, Built, BuildContext, register
from trtbench.variants.exported import dynamic_shapes, export_examples
from trtbench.variants.trt_common import (DYNAMO, DynamoOptions, RangeGuard, TensorRTVariant, build_info,
                                          compile_kwargs, fx_segments, import_torch_tensorrt, inference_copy,
                                          trt_inputs, why_no_torch_tensorrt)
from trtbench.variants.torchscript_common import TORCHSCRIPT_WARNINGS

# its .ts file (torch_tensorrt.save traces and torch.jit.saves it); the .pt2 beside it is the way out
TORCHSCRIPT_FILE = Deprecation("TorchScript (its .ts file)", "torch 2.14", (), TORCHSCRIPT_WARNINGS,
                               instead="its .pt2 file (ExportedProgram), saved beside it")


@register
class TensorRT(TensorRTVariant):
    name = "trt"
    description = ("Torch-TensorRT dynamo frontend (torch.export at opt, engine for min..max), guarded input ranges "
                   "(int8: NVIDIA ModelOpt, then an engine with Q/DQ layers)")
    deprecations = (TORCHSCRIPT_FILE,)
    Options = DynamoOptions
    quantizes = True  # INT8: ModelOpt's post-training quantization (trtbench.variants.modelopt_trt)

    def unavailable_reason(self, target: Target) -> str | None:
        reason = why_no_torch_tensorrt(target.device)
        if reason is None and is_quantized(target.precision):
            from trtbench.variants.modelopt_trt import modelopt_unavailable

            return modelopt_unavailable()
        return reason

    def build(self, model, ctx: BuildContext) -> Built:
        trt = import_torch_tensorrt()
        options = self.options_of(ctx)
        if is_quantized(ctx.precision):
            return self._build_int8(trt, model, ctx, options)
        examples = export_examples(ctx.input_specs, ctx.example_inputs)  # opt stays the config's in the profile
        program = torch.export.export(inference_copy(model), examples, dynamic_shapes=dynamic_shapes(ctx.input_specs))
        kwargs = compile_kwargs(trt, DYNAMO, options, ctx.dtype, ctx.device)
        specs = trt_inputs(trt, ctx.input_specs, ctx.example_inputs)
        compiled = trt.compile(program, ir="dynamo", inputs=specs, **kwargs)
        info = build_info(trt, DYNAMO, kwargs, ctx, fx_segments(compiled))
        state = {"compiled": compiled, "input_specs": ctx.input_specs, "example_inputs": examples}  # save re-exports
        return Built(RangeGuard(compiled, ctx.input_specs), info, state=state)

    @staticmethod
    def _build_int8(trt, model, ctx: BuildContext, options: DynamoOptions) -> Built:
        """ModelOpt INT8 within the accuracy budget, compiled into an engine for min..max and judged again."""
        from trtbench.quantize.fallback import judged, quantize_within_budget
        from trtbench.variants.modelopt_trt import (MODELOPT_IMPORT, compile_modelopt_trt, quantizable_layers_modelopt,
                                                    quantize_modelopt)

        def quantize(settings):  # mtq.quantize works in place: each attempt on a fresh copy
            return quantize_modelopt(inference_copy(model).eval(), ctx.int8.calibration, settings)

        result = quantize_within_budget(quantize, quantizable_layers_modelopt(model), ctx.int8)
        settings = compile_kwargs(trt, DYNAMO, options, ctx.dtype, ctx.device)
        if "enabled_precisions" in settings:  # a weakly typed frontend (before 2.14), as ModelOpt's example sets it
            settings["enabled_precisions"] = {ctx.dtype, torch.int8}
        compiled, kwargs = compile_modelopt_trt(result.model, ctx.example_inputs, ctx.device, ctx.input_specs, settings)
        guarded = RangeGuard(compiled, ctx.input_specs)
        info = {**build_info(trt, DYNAMO, kwargs, ctx, fx_segments(compiled)), "quantizer": "modelopt",
                **judged(guarded, result, ctx.int8, "the TensorRT INT8 engine")}
        state = {"compiled": compiled, "input_specs": ctx.input_specs,
                 "example_inputs": export_examples(ctx.input_specs, ctx.example_inputs),
                 "imports": ["torch_tensorrt", MODELOPT_IMPORT]}
        return Built(guarded, info, state=state)

    def save(self, built: Built, directory: Path, stem: str) -> list[Artifact]:
        trt = import_torch_tensorrt()
        compiled = built.state["compiled"]
        ts_path, ep_path = directory / f"{stem}.ts", directory / f"{stem}.pt2"
        examples = list(built.state["example_inputs"])
        trt.save(compiled, str(ts_path), output_format="torchscript", arg_inputs=examples)
        trt.save(compiled, str(ep_path), output_format="exported_program", arg_inputs=examples,
                 dynamic_shapes=dynamic_shapes(built.state["input_specs"]))
        imports = built.state.get("imports", ["torch_tensorrt"])
        return [Artifact(path=ts_path, loader="torch.jit.load", imports=list(imports)),
                Artifact(path=ep_path, loader="torch.export.load", imports=list(imports))]
