"""FAKES of Torch-TensorRT and NVIDIA ModelOpt (neither installs without CUDA) and what the tests build through them.

Torch-TensorRT's fake is tests/fake_torch_tensorrt.py (the real 2.14.0 front-end's argument rules, no engine);
ModelOpt's here records its calls, with configs shaped as the real presets (tests/quantize/test_modelopt_contract.py
holds both against the real wheels). The tensors stay on the CPU: the fakes run no engine."""

from __future__ import annotations

import importlib.machinery
import sys
import types

import torch

import fake_torch_tensorrt as fake_trt
from trtbench.config.config import InputConfig, Int8Budget
from trtbench.core.schema import from_dict
from trtbench.quantize.calibration import CalibrationData
from trtbench.quantize.common import QuantSettings
from trtbench.quantize.setup import Int8Setup
from trtbench.variants import BuildContext, get_variant, modelopt_trt
from trtbench.variants.trt_common import DynamoOptions

CUDA0 = torch.device("cuda:0")


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.fc = torch.nn.Linear(4, 5)

    def forward(self, x):
        return self.fc(torch.relu(self.conv(x)).mean(dim=(2, 3)))


def dynamic_spec():
    spec = InputConfig(name="input", min_shape=[1, 3, 8, 8], opt_shape=[2, 3, 8, 8], max_shape=[4, 3, 8, 8])
    spec.validate("inputs[0]")
    return spec


def static_spec():
    return from_dict(InputConfig, {"name": "image", "shape": [2, 3, 8, 8]}, "inputs[0]")


def context(spec, options, dtype=torch.float32, built=None, device=CUDA0):
    """A build context for ``device``; the tensors stay on the CPU (the fake runs no engine)."""
    example = torch.randn(spec.opt_shape).to(dtype)
    return BuildContext(device=device, precision="fp16" if dtype == torch.float16 else "fp32", dtype=dtype,
                        example_inputs=(example,), shape_inputs={"opt": (example,)}, input_specs=[spec],
                        options=options, built=built or {})


def install_fake(monkeypatch, current_device=0, **kwargs):
    """The fake as ``torch_tensorrt``, on a machine whose current CUDA device is ``current_device``."""
    fake = fake_trt.make_fake(**kwargs)
    monkeypatch.setitem(sys.modules, "torch_tensorrt", fake)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: current_device)
    return fake


# --- ModelOpt ----------------------------------------------------------------------------------------

class Recorder:
    def __init__(self):
        self.calls: list[tuple[str, tuple, dict]] = []


def fake_modules(recorder: Recorder) -> dict[str, types.ModuleType]:
    """``modelopt.torch.quantization`` (quantize, the two default configs, utils.export_torch_mode) and
    ``torch_tensorrt.dynamo.compile``, recording their calls; configs shaped as the real presets load."""
    import contextlib

    mtq = types.ModuleType("modelopt.torch.quantization")
    entry = [{"quantizer_name": "*", "enable": False}, {"quantizer_name": "*weight_quantizer", "cfg": {}}]
    mtq.INT8_DEFAULT_CFG = {"quant_cfg": list(entry), "algorithm": "max"}
    mtq.FP8_DEFAULT_CFG = {"quant_cfg": list(entry), "algorithm": "max"}

    def quantize(model, config, forward_loop=None):
        recorder.calls.append(("mtq.quantize", (model, config), {"forward_loop": forward_loop}))
        forward_loop(model)
        return model

    mtq.quantize = quantize
    utils = types.ModuleType("modelopt.torch.quantization.utils")

    @contextlib.contextmanager
    def export_torch_mode():
        recorder.calls.append(("export_torch_mode", (), {}))
        yield

    utils.export_torch_mode = export_torch_mode
    mtq.utils = utils
    trt = types.ModuleType("torch_tensorrt")
    trt.dynamo = types.SimpleNamespace(compile=lambda program, **kwargs: recorder.calls.append(
        ("dynamo.compile", (program,), kwargs)) or program.module())
    # the input specs, as given (tests/variants/test_trt_contract.py holds Input's keywords)
    trt.Input = lambda **kwargs: kwargs
    modelopt = types.ModuleType("modelopt")
    modelopt.torch = types.ModuleType("modelopt.torch")
    modelopt.torch.quantization = mtq
    return {"modelopt": modelopt, "modelopt.torch": modelopt.torch, "modelopt.torch.quantization": mtq,
            "modelopt.torch.quantization.utils": utils, "torch_tensorrt": trt}


class _SeededNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.fc = torch.nn.Linear(4, 5)

    def forward(self, x):
        return self.fc(torch.relu(self.conv(x)).mean(dim=(2, 3)))


def install_fakes(patch, sensitive: tuple[str, ...] = (), **trt_kwargs):
    """FAKE torch_tensorrt (``fake_torch_tensorrt.make_fake(**trt_kwargs)``) and ModelOpt on a machine that
    says it has CUDA; (fake trt, ModelOpt recorder)."""
    recorder = Recorder()
    modules = fake_modules(recorder)
    trt = modules["torch_tensorrt"] = fake_trt.make_fake(**trt_kwargs)
    mtq = modules["modelopt.torch.quantization"]
    record_quantize = mtq.quantize

    def quantize(model, config, forward_loop=None):
        record_quantize(model, config, forward_loop=forward_loop)
        disabled = {e["quantizer_name"] for e in config["quant_cfg"] if e.get("enable") is False}
        with torch.no_grad():
            for name in sensitive:
                if f"{name}.*" not in disabled:
                    model.get_submodule(name).weight.neg_()
        return model

    mtq.quantize = quantize
    for name, module in modules.items():
        module.__spec__ = importlib.machinery.ModuleSpec(name, None)  # find_spec reads it
        patch.setitem(sys.modules, name, module)
    patch.setattr(torch.cuda, "is_available", lambda: True)
    patch.setattr(torch.cuda, "current_device", lambda: 0)
    patch.setattr(modelopt_trt, "_require_cuda", lambda device: None)  # the tensors stay on the CPU
    return trt, recorder


def build_trt_int8(patch, sensitive: tuple[str, ...] = (), **trt_kwargs):
    """``trt`` built at int8 from :class:`_SeededNet` through the fakes (tensors stay on the CPU):
    (built, fake trt, recorder)."""
    trt, recorder = install_fakes(patch, sensitive, **trt_kwargs)
    spec = InputConfig(name="input", min_shape=[1, 3, 8, 8], opt_shape=[2, 3, 8, 8], max_shape=[4, 3, 8, 8])
    spec.validate("inputs[0]")
    model = _SeededNet().eval()
    batches = [(torch.randn(2, 3, 8, 8, generator=torch.Generator().manual_seed(i)),) for i in range(6)]
    with torch.inference_mode():
        references = [model(*b) for b in batches[2:]]
    setup = Int8Setup(CalibrationData(batches[:2], batches[2:]), Int8Budget(top1_agree_min=0.99, sqnr_db_min=20),
                      QuantSettings(), 2, references)
    example = batches[0][0]
    ctx = BuildContext(device=CUDA0, precision="int8", dtype=torch.float32, example_inputs=(example,),
                       shape_inputs={"opt": (example,)}, input_specs=[spec], options=DynamoOptions(), int8=setup)
    return get_variant("trt").build(model, ctx), trt, recorder
