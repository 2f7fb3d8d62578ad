"""INT8 for the ``openvino`` variant: NNCF post-training quantization (more: docs/int8.md, "Module notes")."""

from __future__ import annotations

from trtbench.quantize.common import CalibrationBatches, QuantizationUnavailable, QuantSettings

# OpenVINO operation types NNCF quantizes that carry weights or are matrix products.
LAYER_TYPES = ("Convolution", "GroupConvolution", "ConvolutionBackpropData", "MatMul")


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
    settings.require_known(quantizable_layers_openvino(ov_model), "quantizable operations of the OpenVINO model")
    return nncf.IgnoredScope(names=list(settings.exclude))


def quantize_openvino(ov_model, calibration: CalibrationBatches, settings: QuantSettings):
    """``ov_model`` quantized by ``nncf.quantize``, the operations named in ``settings.exclude`` left in fp32."""
    nncf = _nncf()
    return nncf.quantize(ov_model, _dataset(nncf, calibration), subset_size=len(calibration),
                         ignored_scope=_ignored_scope(nncf, ov_model, settings),
                         advanced_parameters=_advanced_parameters(nncf, settings))


def quantizable_layers_openvino(ov_model) -> list[str]:
    """Friendly names of the operations NNCF quantizes (Convolution, GroupConvolution, MatMul...), in order."""
    return [op.get_friendly_name() for op in ov_model.get_ordered_ops() if op.get_type_name() in LAYER_TYPES]
