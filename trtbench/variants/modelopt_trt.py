"""INT8 / FP8 for the ``trt`` variant: NVIDIA ModelOpt (more: docs/tensorrt.md, "Module notes")."""

from __future__ import annotations

import copy
import importlib.util
from typing import Sequence

import torch
from torch import nn

from trtbench.quantize.common import CalibrationBatches, QuantizationUnavailable, QuantSettings

MODELOPT_IMPORT = "modelopt.torch.quantization"  # registers tensorrt::quantize_op (tensor_quant.py)
CONFIGS = {"int8": "INT8_DEFAULT_CFG", "fp8": "FP8_DEFAULT_CFG"}  # precision -> ModelOpt's default config
# modules whose weights ModelOpt quantizes (its nn/modules/quant_conv.py, quant_linear.py): the fallback's candidates
WEIGHT_QUANTIZED = (nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d,
                    nn.Linear)


def _mtq():
    try:
        return importlib.import_module(MODELOPT_IMPORT)
    except ImportError as err:
        raise QuantizationUnavailable(f"NVIDIA ModelOpt is not installed ({err}): pip install nvidia-modelopt "
                                      f"(the trt variant's INT8/FP8 quantizer; it needs CUDA)") from err


def _require_cuda(device: torch.device) -> None:
    if device.type != "cuda" or not torch.cuda.is_available():
        raise QuantizationUnavailable(f"ModelOpt + TensorRT quantization runs on CUDA; the device is {device}"
                                      + ("" if torch.cuda.is_available() else " and this machine has no CUDA"))


def modelopt_unavailable() -> str | None:
    """Why ModelOpt cannot quantize here, without importing it (None when it is installed)."""
    if importlib.util.find_spec("modelopt") is None:
        return ("NVIDIA ModelOpt is not installed: pip install nvidia-modelopt (the trt variant's INT8 quantizer; "
                "it needs CUDA)")
    return None


def quantizable_layers_modelopt(model: nn.Module) -> list[str]:
    """Qualified names of the modules whose weights ModelOpt quantizes (:data:`WEIGHT_QUANTIZED`), in order."""
    return [name for name, module in model.named_modules() if name and isinstance(module, WEIGHT_QUANTIZED)]


def modelopt_config(mtq, precision: str, settings: QuantSettings) -> dict:
    """ModelOpt's default config for ``precision``, with the layers of ``settings.exclude`` disabled."""
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
    """``model`` (on CUDA, eval mode) quantized in place by ``mtq.quantize``, ModelOpt's config for ``precision``."""
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


def compile_modelopt_trt(quantized: nn.Module, example_inputs: Sequence[torch.Tensor], device: torch.device,
                         input_specs: Sequence, settings: dict):
    """A ModelOpt-quantized model compiled by Torch-TensorRT for min..max (min_block_size 1), and its settings."""
    from trtbench.variants.exported import dynamic_shapes, export_examples
    from trtbench.variants.trt_common import trt_inputs

    _require_cuda(device)
    try:
        import torch_tensorrt
    except ImportError as err:
        raise QuantizationUnavailable(f"Torch-TensorRT is not installed ({err})") from err
    from modelopt.torch.quantization.utils import export_torch_mode

    kwargs = {**settings, "min_block_size": 1}
    with torch.no_grad(), export_torch_mode():
        program = torch.export.export(quantized, export_examples(input_specs, tuple(example_inputs)),
                                      dynamic_shapes=dynamic_shapes(input_specs), strict=False)
        compiled = torch_tensorrt.dynamo.compile(program,
                                                 inputs=trt_inputs(torch_tensorrt, input_specs, example_inputs),
                                                 **kwargs)
    return compiled, kwargs
