"""The ``compiled`` and ``aoti`` variants at ``int8``: the model quantized by PT2E within the accuracy budget."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass

import torch

from trtbench.core.precision import is_quantized
from trtbench.core.target import Target
from trtbench.quantize.fallback import Quantized, quantize_within_budget
from trtbench.variants import BuildContext

# what a process that loads the saved graph imports first: the quantized_decomposed ops, torchao's Inductor passes
DECOMPOSED_OPS_MODULE = "torch.ao.quantization.fx._decomposed"
INDUCTOR_PASSES_MODULE = "torchao.quantization.pt2e.quantizer.x86_inductor_quantizer"


def pt2e_unavailable(target: Target) -> str | None:
    """Why PT2E INT8 cannot build at ``target`` here (None when it can, or the precision is not int8)."""
    if not is_quantized(target.precision):
        return None
    if target.device.type != "cpu":
        return ("PT2E's X86InductorQuantizer targets x86 CPUs; on CUDA the trt variant quantizes with "
                "ModelOpt")
    if importlib.util.find_spec("torchao") is None:
        return "torchao is not installed (pip install 'trtbench[int8]')"
    return None


@dataclass(frozen=True)
class Pt2eInt8:
    """A quantized graph that met the budget, how it was exported, and the fallback's findings."""

    graph: torch.fx.GraphModule
    quantized: Quantized
    dynamic_shapes: object
    outputs: list[str]


def quantize_model(model: torch.nn.Module, ctx: BuildContext) -> Pt2eInt8:
    """``model`` quantized by PT2E within ``ctx.int8``'s budget, or the graph an earlier variant quantized here."""
    earlier = next((built.state["int8"] for built in ctx.built.values()
                    if isinstance(built.state, dict) and isinstance(built.state.get("int8"), Pt2eInt8)), None)
    if earlier is not None:
        return earlier
    from trtbench.quantize.pt2e import quantizable_layers_pt2e, quantize_pt2e
    from trtbench.variants.exported import dynamic_shapes, export_examples, flat_outputs

    examples = export_examples(ctx.input_specs, ctx.example_inputs)
    exportable, names, flattened = flat_outputs(model, examples)
    shapes = dynamic_shapes(ctx.input_specs)
    if flattened:  # FlatOutputs.forward(*inputs) takes them all as one argument
        shapes = {"inputs": shapes}

    def quantize(settings) -> torch.fx.GraphModule:
        return quantize_pt2e(exportable, examples, ctx.int8.calibration, settings, dynamic_shapes=shapes)

    result = quantize_within_budget(quantize, quantizable_layers_pt2e(exportable), ctx.int8)
    return Pt2eInt8(result.model, result, shapes, names)
