"""What the INT8 tests read back from a quantized model, beside what the package builds: whether a PT2E graph or an
OpenVINO model really is int8, which of its layers stayed fp32, the OpenVINO operations of named PyTorch modules,
and NNCF's accuracy control, which the package does not use (docs/int8.md, "Module notes")."""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import torch

from trtbench.quantize.common import CalibrationBatches, QuantSettings
from trtbench.quantize.openvino import (LAYER_TYPES, _advanced_parameters, _dataset, _ignored_scope, _nncf,
                                        quantizable_layers_openvino)

# --- PT2E -------------------------------------------------------------------------------------------------------

QUANTIZED_OPS_NAMESPACE = "quantized_decomposed"  # torch.ops.quantized_decomposed.{quantize,dequantize}_per_*
WEIGHT_OPS = {"conv1d", "conv2d", "linear"}  # aten ops whose args[1] is the layer's weight


def _is_quantized_op(node: torch.fx.Node) -> bool:
    return node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload) and \
        node.target.namespace == QUANTIZED_OPS_NAMESPACE


def is_int8_pt2e(gm: torch.fx.GraphModule) -> bool:
    """Whether the graph really is quantized: it has ``quantized_decomposed`` quantize/dequantize ops
    and int8 weights. A float graph (an export of the fp32 model) has neither."""
    has_ops = any(_is_quantized_op(node) for node in gm.graph.nodes)
    constants = [operator.attrgetter(node.target)(gm) for node in gm.graph.nodes if node.op == "get_attr"]
    has_int8 = any(isinstance(t, torch.Tensor) and t.dtype == torch.int8 for t in constants)
    return has_ops and has_int8


def _layer_name(node: torch.fx.Node) -> str | None:
    stack = node.meta.get("nn_module_stack")
    return list(stack.values())[-1][0] if stack else None


def fp32_layers_pt2e(gm: torch.fx.GraphModule) -> list[str]:
    """Module names of the conv/linear layers whose weight does not come out of a dequantize op
    (the layers kept in fp32), read from the converted graph itself."""
    kept = []
    for node in gm.graph.nodes:
        if node.op == "call_function" and getattr(node.target, "_opname", None) in WEIGHT_OPS:
            weight = node.args[1]
            if not (isinstance(weight, torch.fx.Node) and _is_quantized_op(weight)):
                kept.append(_layer_name(node))
    return kept


# --- OpenVINO and NNCF ------------------------------------------------------------------------------------------

# Ops between a layer and its quantizer: the weight decompression NNCF writes (Convert, Subtract,
# Multiply), and layout ops; any other op ends the walk.
TRANSPARENT = {"Convert", "Subtract", "Multiply", "Reshape", "Transpose", "Unsqueeze"}
LOW_PRECISION = {"i8", "u8", "i4", "u4"}  # Type.get_type_name() of int8/int4 weight constants


def _layers(ov_model):
    return [op for op in ov_model.get_ordered_ops() if op.get_type_name() in LAYER_TYPES]


def layers_of_modules(ov_model, module_names: Sequence[str]) -> list[str]:
    """The quantizable operations that ``openvino.convert_model`` made from the named PyTorch modules
    (it names them ``__module.<qualified name>/...``)."""
    prefixes = tuple(f"__module.{name}/" for name in module_names)
    return [name for name in quantizable_layers_openvino(ov_model) if name.startswith(prefixes)]


def _reaches_quantizer(port) -> bool:
    """Whether an input, followed up through the transparent ops, comes from a FakeQuantize or a
    low-precision (int8/int4) constant."""
    node = port.get_source_output().get_node()
    while True:
        kind = node.get_type_name()
        if kind == "FakeQuantize":
            return True
        if kind == "Constant":
            return node.get_output_element_type(0).get_type_name() in LOW_PRECISION
        if kind not in TRANSPARENT:
            return False
        node = node.input(0).get_source_output().get_node()


def fp32_layers_openvino(ov_model) -> list[str]:
    """Quantizable operations none of whose inputs is quantized: the layers that run in fp32."""
    return [op.get_friendly_name() for op in _layers(ov_model) if not any(_reaches_quantizer(i) for i in op.inputs())]


def is_int8_openvino(ov_model) -> bool:
    """Whether the model really is quantized: some quantizable operation takes a FakeQuantize'd or
    int8 input. The fp32 model (and a quantizer that hands it back) has none."""
    return any(_reaches_quantizer(i) for op in _layers(ov_model) for i in op.inputs())


@dataclass(frozen=True)
class AccuracyControl:
    """What NNCF's accuracy control judges a quantized model by: ``validate_fn(compiled_model, items)``
    gives the metric (higher is better) of an ``openvino.CompiledModel`` on a list of ``validation``
    items (NNCF also calls it on single items to rank the layers), which may drop by at most
    ``max_drop`` (absolute) from the fp32 model's; ``max_reverted`` caps the number of revert steps
    (NNCF's ``max_num_iterations``)."""

    validation: Sequence[Any]
    validate_fn: Callable[[Any, list], float]
    max_drop: float
    max_reverted: int | None = None


def quantize_openvino_with_accuracy_control(ov_model, calibration: CalibrationBatches, control: AccuracyControl,
                                            settings: QuantSettings = QuantSettings()) -> tuple[Any, list[str]]:
    """``nncf.quantize_with_accuracy_control`` judged by ``control``: the model, and the names of its quantizable
    operations left in fp32 beyond ``settings.exclude``."""
    nncf = _nncf()
    from nncf.quantization.advanced_parameters import AdvancedAccuracyRestorerParameters

    restorer = AdvancedAccuracyRestorerParameters(num_ranking_workers=1)  # 2 shared cores: no worker pool
    if control.max_reverted is not None:
        restorer.max_num_iterations = control.max_reverted
    model = nncf.quantize_with_accuracy_control(
        ov_model, _dataset(nncf, calibration), nncf.Dataset(control.validation),
        lambda compiled, items: (float(control.validate_fn(compiled, list(items))), None),  # (metric, per-item values)
        max_drop=control.max_drop, drop_type=nncf.DropType.ABSOLUTE, subset_size=len(calibration),
        ignored_scope=_ignored_scope(nncf, ov_model, settings),
        advanced_quantization_parameters=_advanced_parameters(nncf, settings),
        advanced_accuracy_restorer_parameters=restorer)
    return model, [name for name in fp32_layers_openvino(model) if name not in settings.exclude]
