"""INT8 / FP8 for the ``trt`` variant on CUDA: NVIDIA ModelOpt quantizes, Torch-TensorRT compiles.

As pytorch/TensorRT's ``examples/dynamo/vgg16_ptq.py`` does: ``mtq.quantize(model,
mtq.INT8_DEFAULT_CFG or mtq.FP8_DEFAULT_CFG, forward_loop=...)`` inserts calibrated
``TensorQuantizer`` modules in place, then the model is exported under ``torch.no_grad()`` and
``export_torch_mode()`` (the quantizers export as ``torch.ops.tensorrt.quantize_op``) and compiled by
``torch_tensorrt.dynamo.compile(..., min_block_size=1)``, whose converter turns those ops into
TensorRT Q/DQ layers.

One departure from the example, from torch-tensorrt 2.14.0's own sources: its
``dynamo.compile`` has no ``enabled_precisions`` parameter any more (networks are strongly typed;
the Q/DQ layers set the precision) and would swallow it in ``**kwargs``, so it is not passed.
tests/test_modelopt_contract.py holds every name used here against the real wheels (file:line).

Exclusion (the fallback's layers kept in floating point) is ModelOpt's own config: an entry
``{"quantizer_name": "<module>.*", "enable": False}`` appended to ``quant_cfg`` (later entries
override earlier ones). Neither library installs without CUDA, so both are imported lazily and
:class:`QuantizationUnavailable` names what is missing.
"""

from __future__ import annotations

import copy
from typing import Sequence

import torch
from torch import nn

from trtbench.quantize.common import CalibrationBatches, QuantizationUnavailable, QuantSettings

CONFIGS = {"int8": "INT8_DEFAULT_CFG", "fp8": "FP8_DEFAULT_CFG"}  # precision -> ModelOpt's default config


def _mtq():
    try:
        import modelopt.torch.quantization as mtq
    except ImportError as err:
        raise QuantizationUnavailable(f"NVIDIA ModelOpt is not installed ({err}): pip install nvidia-modelopt "
                                      f"(the trt variant's INT8/FP8 quantizer; it needs CUDA)") from err
    return mtq


def _require_cuda(device: torch.device) -> None:
    if device.type != "cuda" or not torch.cuda.is_available():
        raise QuantizationUnavailable(f"ModelOpt + TensorRT quantization runs on CUDA; the device is {device}"
                                      + ("" if torch.cuda.is_available() else " and this machine has no CUDA"))


def modelopt_config(mtq, precision: str, settings: QuantSettings) -> dict:
    """ModelOpt's default config for ``precision``, with the layers of ``settings.exclude`` disabled.

    The defaults calibrate by ``algorithm: max`` with per-channel int8 weights; a calibration method
    or per-tensor weights other than that is not offered here rather than silently ignored."""
    if precision not in CONFIGS:
        raise ValueError(f"precision {precision!r}: ModelOpt's defaults here are {', '.join(CONFIGS)}")
    if settings.method != "minmax" or not settings.per_channel:
        raise QuantizationUnavailable(f"ModelOpt's {CONFIGS[precision]} calibrates by max with per-channel weights; "
                                      f"method {settings.method!r}, per_channel {settings.per_channel} are not "
                                      f"offered on the trt variant (use method: minmax, per_channel: true)")
    config = copy.deepcopy(getattr(mtq, CONFIGS[precision]))
    config["quant_cfg"] = list(config["quant_cfg"]) + [
        {"quantizer_name": f"{name}.*", "enable": False} for name in settings.exclude]
    return config


def quantize_modelopt(model: nn.Module, calibration: CalibrationBatches, settings: QuantSettings,
                      precision: str = "int8") -> nn.Module:
    """``model`` (on its CUDA device, eval mode) quantized in place by ``mtq.quantize`` with ModelOpt's
    default config for ``precision``, calibrated by a forward loop over the batches; returned."""
    mtq = _mtq()
    _require_cuda(next(model.parameters()).device)
    known = {name for name, module in model.named_modules() if name}
    unknown = [name for name in settings.exclude if name not in known]
    if unknown:
        raise ValueError(f"cannot keep {unknown} in floating point: the model has no such modules")
    config = modelopt_config(mtq, precision, settings)

    def forward_loop(module: nn.Module) -> None:
        for batch in calibration:
            module(*batch)

    with torch.no_grad():
        return mtq.quantize(model, config, forward_loop=forward_loop)


def compile_modelopt_trt(quantized: nn.Module, example_inputs: Sequence[torch.Tensor], device: torch.device):
    """A ModelOpt-quantized model compiled by Torch-TensorRT's dynamo frontend, static shapes of
    ``example_inputs`` (as the example does), min_block_size 1 so no Q/DQ pair is left to PyTorch."""
    _require_cuda(device)
    try:
        import torch_tensorrt
    except ImportError as err:
        raise QuantizationUnavailable(f"Torch-TensorRT is not installed ({err})") from err
    from modelopt.torch.quantization.utils import export_torch_mode

    with torch.no_grad(), export_torch_mode():
        program = torch.export.export(quantized, tuple(example_inputs), strict=False)
        return torch_tensorrt.dynamo.compile(program, inputs=list(example_inputs), min_block_size=1, device=device)
