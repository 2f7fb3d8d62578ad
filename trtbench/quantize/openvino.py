"""INT8 for the ``openvino`` variant: NNCF post-training quantization of the OpenVINO model.

``nncf.quantize`` inserts FakeQuantize ops on activations and compresses weights to int8 constants
(``Constant(i8) -> Convert -> Multiply``), which the OpenVINO CPU plugin runs as int8 kernels. Exclusion is
NNCF's ``IgnoredScope(names=...)`` of OpenVINO operation names; which layers stayed fp32 is read from the
quantized model (:func:`fp32_layers_openvino`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from trtbench.quantize.common import CalibrationBatches, QuantizationUnavailable, QuantSettings

# OpenVINO operation types NNCF quantizes that carry weights or are matrix products.
LAYER_TYPES = ("Convolution", "GroupConvolution", "ConvolutionBackpropData", "MatMul")
# Ops between a layer and its quantizer: the weight decompression NNCF writes (Convert, Subtract,
# Multiply), and layout ops; any other op ends the walk.
_TRANSPARENT = {"Convert", "Subtract", "Multiply", "Reshape", "Transpose", "Unsqueeze"}
_LOW_PRECISION = {"i8", "u8", "i4", "u4"}  # Type.get_type_name() of int8/int4 weight constants


def _nncf():
    try:
        import nncf
        import openvino  # noqa: F401  (nncf's OpenVINO backend needs it)
    except ImportError as err:
        raise QuantizationUnavailable(f"NNCF for OpenVINO is not installed ({err}): "
                                      f"pip install 'trtbench[openvino,int8]'") from err
    return nncf


def _range_estimator(nncf, method: str):
    """NNCF's activation range estimator for a calibration method."""
    from nncf.quantization.range_estimator import RangeEstimatorParametersSet

    return {"minmax": RangeEstimatorParametersSet.MINMAX, "percentile": RangeEstimatorParametersSet.MEAN_QUANTILE,
            "entropy": RangeEstimatorParametersSet.HISTOGRAM}[method]


def _advanced_parameters(nncf, settings: QuantSettings):
    from nncf.quantization.advanced_parameters import AdvancedQuantizationParameters, QuantizationParameters

    return AdvancedQuantizationParameters(
        activations_range_estimator_params=_range_estimator(nncf, settings.method),
        weights_quantization_params=QuantizationParameters(per_channel=settings.per_channel))


def _dataset(nncf, items: CalibrationBatches):
    """An nncf.Dataset of the batches; each becomes the positional inputs of one inference."""
    return nncf.Dataset(items, lambda batch: tuple(t.detach().cpu().numpy() for t in batch))


def _ignored_scope(nncf, ov_model, settings: QuantSettings):
    known = set(quantizable_layers_openvino(ov_model))
    unknown = [name for name in settings.exclude if name not in known]
    if unknown:
        raise ValueError(f"cannot keep {unknown} in fp32: not quantizable operations of the OpenVINO model "
                         f"(those are {sorted(known)})")
    return nncf.IgnoredScope(names=list(settings.exclude))


def quantize_openvino(ov_model, calibration: CalibrationBatches, settings: QuantSettings):
    """``ov_model`` (an ``openvino.Model``) quantized to INT8 by ``nncf.quantize``, calibrated on every
    batch, with the operations named in ``settings.exclude`` left in fp32."""
    nncf = _nncf()
    return nncf.quantize(ov_model, _dataset(nncf, calibration), subset_size=len(calibration),
                         ignored_scope=_ignored_scope(nncf, ov_model, settings),
                         advanced_parameters=_advanced_parameters(nncf, settings))


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


def _layers(ov_model):
    return [op for op in ov_model.get_ordered_ops() if op.get_type_name() in LAYER_TYPES]


def quantizable_layers_openvino(ov_model) -> list[str]:
    """Friendly names of the operations NNCF quantizes (Convolution, GroupConvolution, MatMul...), in order."""
    return [op.get_friendly_name() for op in _layers(ov_model)]


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
            return node.get_output_element_type(0).get_type_name() in _LOW_PRECISION
        if kind not in _TRANSPARENT:
            return False
        node = node.input(0).get_source_output().get_node()


def fp32_layers_openvino(ov_model) -> list[str]:
    """Quantizable operations none of whose inputs is quantized: the layers that run in fp32."""
    return [op.get_friendly_name() for op in _layers(ov_model) if not any(_reaches_quantizer(i) for i in op.inputs())]


def is_int8_openvino(ov_model) -> bool:
    """Whether the model really is quantized: some quantizable operation takes a FakeQuantize'd or
    int8 input. The fp32 model (and a quantizer that hands it back) has none."""
    layers = _layers(ov_model)
    return any(_reaches_quantizer(i) for op in layers for i in op.inputs())
