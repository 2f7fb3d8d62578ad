"""ONNX Runtime static INT8 quantization, layers kept in fp32 by ONNX node name (docs/int8.md)."""

from __future__ import annotations

import ast
import tempfile
from pathlib import Path
from typing import Sequence

from trtbench.quantize.common import CalibrationBatches, QuantSettings

QUANTIZABLE_OPS = ("Conv", "MatMul", "Gemm")  # the nodes whose weights and inputs INT8 quantizes
_METHODS = {"minmax": "MinMax", "entropy": "Entropy", "percentile": "Percentile"}


def _reader(input_names: Sequence[str], calibration: CalibrationBatches):
    """A ``CalibrationDataReader`` over the calibration batches, as ``{input name: numpy array}``."""
    from onnxruntime.quantization import CalibrationDataReader

    class BatchReader(CalibrationDataReader):
        def __init__(self):
            self._items = iter([{name: t.detach().cpu().contiguous().numpy() for name, t in zip(input_names, batch)}
                                for batch in calibration])

        def get_next(self):
            return next(self._items, None)

    return BatchReader()


def cpu_quant_types() -> dict:
    """``quantize_static``'s types for this CPU, as its "Choosing parameters for CPU inference" advises."""
    import platform

    from trtbench.core.env import cpu_int8_features

    if platform.machine().lower() in ("aarch64", "arm64"):
        return {"activation_type": "QInt8", "weight_type": "QInt8", "reduce_range": False}
    return {"activation_type": "QUInt8", "weight_type": "QInt8", "reduce_range": not cpu_int8_features().get("vnni")}


def quantize_onnx(fp32_onnx: Path, out: Path, input_names: Sequence[str], calibration: CalibrationBatches,
                  settings: QuantSettings, calibration_cache: Path | None = None) -> Path:
    """``out``, ``fp32_onnx`` quantized to INT8 (QDQ) there (``calibration_cache``: the ranges, for later calls)."""
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    out = Path(out)
    types = cpu_quant_types()
    with tempfile.TemporaryDirectory(prefix="trtbench-ort-int8-") as work:
        prepared = Path(work) / "prepared.onnx"
        quant_pre_process(str(fp32_onnx), str(prepared))
        quantize_static(str(prepared), str(out), _reader(input_names, calibration),
                        quant_format=QuantFormat.QDQ, per_channel=settings.per_channel,
                        calibrate_method=getattr(CalibrationMethod, _METHODS[settings.method]),
                        nodes_to_exclude=list(settings.exclude) or None,
                        activation_type=getattr(QuantType, types["activation_type"]),
                        weight_type=getattr(QuantType, types["weight_type"]), reduce_range=types["reduce_range"],
                        calibration_providers=["CPUExecutionProvider"],
                        calibration_cache_path=str(calibration_cache) if calibration_cache else None)
    return out


def quantizable_layers_onnx(path: Path) -> list[str]:
    """Names of the Conv/MatMul/Gemm nodes of the ONNX model at ``path``, in graph order (``nodes_to_exclude``'s)."""
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    return [node.name for node in model.graph.node if node.op_type in QUANTIZABLE_OPS]


def onnx_layer_modules(path: Path) -> dict[str, str]:
    """Node name -> the PyTorch module it came from (``layer1.0.conv2``), from the exporter's metadata."""
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    modules = {}
    for node in model.graph.node:
        for prop in node.metadata_props:
            if prop.key == "pkg.torch.onnx.name_scopes":
                scopes = [s for s in ast.literal_eval(prop.value)[:-1] if s]  # the last one is the op itself
                if scopes:
                    modules[node.name] = ".".join(scopes)
    return modules
