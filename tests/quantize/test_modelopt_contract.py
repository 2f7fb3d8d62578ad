"""Contract of trtbench/variants/modelopt_trt.py with the real nvidia-modelopt 0.47.0 and
torch-tensorrt 2.14.0 wheels: every name it uses, every keyword it passes and every config entry it
writes exists in their sources, read from the wheels with ``ast`` (neither installs without CUDA).

The wheels are fetched once with ``pip download`` (pinned by sha256) into ``.cache/``, as
tests/variants/test_trt_contract.py does (its ``wheel`` fixture is reused for torch-tensorrt). trtbench's
calls are recorded through small fakes of ``modelopt.torch.quantization`` and ``torch_tensorrt``
and judged by what the sources define. Without the package registry these tests fail; they never skip.

Where each name lives (nvidia-modelopt 0.47.0):
- modelopt/torch/quantization/model_quant.py:226 ``def quantize(model, config, forward_loop=None)``,
  in its ``__all__`` (:48), star-imported by modelopt/torch/quantization/__init__.py:25;
- modelopt/torch/quantization/config.py:1681 ``INT8_DEFAULT_CFG``, :1688 ``FP8_DEFAULT_CFG``
  (no ``__all__``: star-imported by __init__.py:23); :165 ``QuantizerCfgEntry`` with
  ``quantizer_name`` (:168) and ``enable`` (:186);
- modelopt_recipes/configs/ptq/presets/model/int8.yaml: ``algorithm: max``, weights
  ``int8_per_channel`` (configs/numerics/int8_per_channel.yaml: ``axis: 0``);
- modelopt/torch/quantization/utils/core_utils.py:406 ``export_torch_mode``, in
  modelopt/torch/quantization/utils/__init__.py's ``__all__``;
- modelopt/torch/quantization/nn/modules/quant_conv.py:43, 56, 85, 155, 168, 181 and quant_linear.py:38
  register the modules whose weights are quantized (``WEIGHT_QUANTIZED``, the fallback's candidates);
- modelopt/torch/quantization/tensor_quant.py:224 defines ``tensorrt::quantize_op`` (so a saved INT8
  engine's loader imports ``modelopt.torch.quantization``).
torch-tensorrt 2.14.0: torch_tensorrt/dynamo/_compiler.py:438 ``compile(exported_program, inputs,
..., min_block_size, device, ...)`` (the trt variant's INT8 build passes its compile settings, each a named
parameter, and ``inputs`` with the config's min..max), no ``enabled_precisions`` parameter (its ``**kwargs`` would
swallow it), and torch_tensorrt/dynamo/conversion/aten_ops_converters.py:974 the converter of
``torch.ops.tensorrt.quantize_op`` that ``export_torch_mode`` makes the quantizers export as.
"""

from __future__ import annotations

import ast
import sys
import zipfile

import pytest
import torch
import yaml

from pinned_wheel import CACHE_ROOT, open_pinned_wheel
from helpers.fakes import Recorder, fake_modules
from helpers.trt_wheel import DYNAMO_COMPILE, function, named_parameters, wheel  # noqa: F401  (wheel: the torch-tensorrt fixture)
from trtbench.config.config import InputConfig
from trtbench.variants import modelopt_trt
from trtbench.quantize.common import QuantizationUnavailable, QuantSettings

MODELOPT_VERSION = "0.47.0"
MODELOPT_WHEEL = f"nvidia_modelopt-{MODELOPT_VERSION}-py3-none-any.whl"
MODELOPT_SHA256 = "db13e62d7efe4a1512e8b8c3f479e28d64022306f94a194f13234e7dca1d3120"
MODELOPT_CACHE = CACHE_ROOT / f"nvidia-modelopt-{MODELOPT_VERSION}"
MTQ = "modelopt/torch/quantization"


@pytest.fixture(scope="module")
def modelopt_wheel() -> zipfile.ZipFile:
    with open_pinned_wheel(f"nvidia-modelopt=={MODELOPT_VERSION}", MODELOPT_WHEEL, MODELOPT_SHA256,
                           MODELOPT_CACHE) as archive:
        yield archive


def module_names(archive: zipfile.ZipFile, file: str) -> tuple[set[str], list[str] | None]:
    """(top-level names a source file defines, its ``__all__`` or None)."""
    tree = ast.parse(archive.read(file).decode())
    names, exported = set(), None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) \
            else []
        for target in targets:
            if isinstance(target, ast.Name):
                names.add(target.id)
                if target.id == "__all__":
                    exported = [ast.literal_eval(e) for e in node.value.elts]
    return names, exported


def star_exports(archive, file: str) -> set[str]:
    """What ``from <file> import *`` brings: ``__all__`` where there is one, else the public names."""
    names, exported = module_names(archive, file)
    return set(exported) if exported is not None else {n for n in names if not n.startswith("_")}


def package_exports(archive, package: str) -> set[str]:
    """Names a package's ``__init__.py`` makes available: its star-imports and its ``from .x import a``."""
    tree = ast.parse(archive.read(f"{package}/__init__.py").decode())
    names = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            for alias in node.names:
                if alias.name == "*":
                    names |= star_exports(archive, f"{package}/{node.module.replace('.', '/')}.py")
                else:
                    names.add(alias.asname or alias.name)
    return names


def class_fields(archive, file: str, cls: str) -> set[str]:
    tree = ast.parse(archive.read(file).decode())
    (node,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls]
    return {n.target.id for n in node.body if isinstance(n, ast.AnnAssign)}


# --- trtbench's calls, recorded through fakes --------------------------------------------------------

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 4, 3)
        self.fc = torch.nn.Linear(4 * 6 * 6, 3)

    def forward(self, x):
        return self.fc(torch.flatten(torch.relu(self.conv(x)), 1))


SPEC = InputConfig(name="input", min_shape=[1, 1, 8, 8], opt_shape=[2, 1, 8, 8], max_shape=[4, 1, 8, 8])


@pytest.fixture(scope="module")
def recorded() -> list[tuple[str, tuple, dict]]:
    """One INT8 and one FP8 quantize + compile through the fakes, the first keeping ``conv`` out;
    CUDA is faked present and the tensors stay on the CPU (only the fakes see them)."""
    recorder = Recorder()
    batches = [(torch.randn(2, 1, 8, 8),) for _ in range(3)]
    with pytest.MonkeyPatch.context() as patch:
        for name, module in fake_modules(recorder).items():
            patch.setitem(sys.modules, name, module)
        patch.setattr(modelopt_trt, "_require_cuda", lambda device: None)
        for precision, exclude in (("int8", ("conv",)), ("fp8", ())):
            model = modelopt_trt.quantize_modelopt(Net().eval(), batches, QuantSettings(exclude=exclude), precision)
            modelopt_trt.compile_modelopt_trt(model, batches[0], torch.device("cuda", 0), [SPEC], {})
    return recorder.calls


def test_the_module_names_exist_in_modelopt(modelopt_wheel):
    exports = package_exports(modelopt_wheel, MTQ)
    assert {"quantize", *modelopt_trt.CONFIGS.values()} <= exports
    assert "export_torch_mode" in star_exports(modelopt_wheel, f"{MTQ}/utils/__init__.py") and \
        "export_torch_mode" in module_names(modelopt_wheel, f"{MTQ}/utils/core_utils.py")[0]


def test_quantize_is_called_with_the_real_parameters(modelopt_wheel, recorded):
    real = function(modelopt_wheel, (f"{MTQ}/model_quant.py", "quantize"))
    positional = [a.arg for a in real.args.args]
    assert positional == ["model", "config", "forward_loop"]
    calls = [c for c in recorded if c[0] == "mtq.quantize"]
    assert len(calls) == 2
    for _, args, kwargs in calls:
        assert len(args) == 2 and set(kwargs) == {"forward_loop"}  # model, config positional as documented


def test_the_config_entries_are_quantizercfgentry_fields(modelopt_wheel, recorded):
    fields = class_fields(modelopt_wheel, f"{MTQ}/config.py", "QuantizerCfgEntry")
    assert {"quantizer_name", "enable"} <= fields
    (int8, fp8) = [c[1][1] for c in recorded if c[0] == "mtq.quantize"]
    added = int8["quant_cfg"][-1]
    assert added == {"quantizer_name": "conv.*", "enable": False} and set(added) <= fields
    assert fp8["quant_cfg"] == fake_mtq().FP8_DEFAULT_CFG["quant_cfg"]  # nothing excluded, nothing added


def fake_mtq():
    return fake_modules(Recorder())["modelopt.torch.quantization"]


def test_the_int8_default_calibrates_by_max_with_per_channel_weights(modelopt_wheel):
    """Why modelopt_config offers only method minmax with per-channel weights."""
    preset = yaml.safe_load(modelopt_wheel.read("modelopt_recipes/configs/ptq/presets/model/int8.yaml"))
    assert preset["algorithm"] == "max"
    weights = [e for e in preset["quant_cfg"] if e.get("quantizer_name") == "*weight_quantizer"]
    assert weights and weights[0]["cfg"] == {"$import": "int8_per_channel"}
    assert yaml.safe_load(modelopt_wheel.read("modelopt_recipes/configs/numerics/int8_per_channel.yaml"))["axis"] == 0
    config_file = modelopt_wheel.read(f"{MTQ}/config.py").decode()
    for name, preset_name in (("INT8_DEFAULT_CFG", "int8"), ("FP8_DEFAULT_CFG", "fp8")):
        assert f'{name}: dict[str, Any] = _load_quantize_config_dict("configs/ptq/presets/model/{preset_name}")' \
            in config_file


def test_compile_keywords_are_named_parameters_of_dynamo_compile(wheel, recorded):  # noqa: F811
    named = named_parameters(wheel, DYNAMO_COMPILE)
    assert "enabled_precisions" not in named  # why the example's enabled_precisions={torch.int8} is not passed
    calls = [c for c in recorded if c[0] == "dynamo.compile"]
    assert len(calls) == 2
    for _, args, kwargs in calls:
        assert set(kwargs) <= named, sorted(set(kwargs) - named)
        assert kwargs["min_block_size"] == 1 and isinstance(args[0], torch.export.ExportedProgram)
        assert kwargs["inputs"] == [{"min_shape": (1, 1, 8, 8), "opt_shape": (2, 1, 8, 8), "max_shape": (4, 1, 8, 8),
                                     "dtype": torch.float32}]  # the engine serves min..max
        assert [str(d) for d in args[0].range_constraints.values()] == ["VR[1, 4]"]  # the batch dim exported dynamic
    # each export ran inside export_torch_mode, so the quantizers export as tensorrt.quantize_op
    assert [c[0] for c in recorded].count("export_torch_mode") == 2


def test_torch_tensorrt_converts_modelopts_quantize_op(wheel):  # noqa: F811
    source = wheel.read("torch_tensorrt/dynamo/conversion/aten_ops_converters.py").decode()
    assert "torch.ops.tensorrt.quantize_op.default, supports_dynamic_shapes=True" in source
    assert "import modelopt.torch.quantization as mtq" in source


def test_without_modelopt_or_cuda_the_trt_int8_path_is_unavailable(monkeypatch):
    monkeypatch.setitem(sys.modules, "modelopt.torch.quantization", None)  # import raises ImportError
    with pytest.raises(QuantizationUnavailable, match="pip install nvidia-modelopt"):
        modelopt_trt.quantize_modelopt(Net().eval(), [], QuantSettings())
    with pytest.raises(QuantizationUnavailable, match="runs on CUDA"):
        modelopt_trt.compile_modelopt_trt(Net().eval(), (torch.randn(2, 1, 8, 8),), torch.device("cpu"), [SPEC], {})


def test_other_calibration_methods_are_refused_with_the_reason():
    with pytest.raises(QuantizationUnavailable, match="calibrates by max"):
        modelopt_trt.modelopt_config(fake_mtq(), "int8", QuantSettings(method="entropy"))


def test_the_fallbacks_candidate_modules_are_the_ones_modelopt_quantizes_weights_of(modelopt_wheel):
    """modelopt/torch/quantization/nn/modules/quant_conv.py:43-181 registers the convolutions and
    quant_linear.py:38 ``nn.Linear``, each with a weight quantizer: WEIGHT_QUANTIZED names exactly those."""
    sources = {file: modelopt_wheel.read(f"{MTQ}/nn/modules/{file}").decode()
               for file in ("quant_conv.py", "quant_linear.py")}
    modules = ("Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d", "Linear")
    registered = {name for text in sources.values() for name in modules
                  if f'@QuantModuleRegistry.register({{nn.{name}: "nn.{name}"}})' in text}
    assert registered == {cls.__name__ for cls in modelopt_trt.WEIGHT_QUANTIZED}


def test_the_loaders_modelopt_import_defines_the_quantize_op(modelopt_wheel):
    """A saved INT8 engine's loader imports MODELOPT_IMPORT: the package (its __init__ imports .nn, whose
    quantizers use tensor_quant) defines ``tensorrt::quantize_op`` at tensor_quant.py:224."""
    assert modelopt_trt.MODELOPT_IMPORT == "modelopt.torch.quantization"
    tensor_quant = modelopt_wheel.read(f"{MTQ}/tensor_quant.py").decode()
    assert 'torch.library.define(\n        "tensorrt::quantize_op"' in tensor_quant
    package = modelopt_wheel.read(f"{MTQ}/__init__.py").decode()
    assert "from .nn.modules.quant_module import QuantModuleRegistry" in package


def test_the_trt_variants_int8_build_passes_only_named_parameters_of_dynamo_compile(wheel, monkeypatch):  # noqa: F811
    """The trt variant's own call path (tests/quantize/test_trt_int8.py builds it through the fakes): its compile
    keywords (the variant's settings, min_block_size 1) are named parameters of the real dynamo.compile
    (torch_tensorrt/dynamo/_compiler.py:438), so **kwargs swallows none."""
    from helpers.fakes import build_trt_int8

    _, trt, _ = build_trt_int8(monkeypatch)
    named = named_parameters(wheel, DYNAMO_COMPILE)
    (kwargs,) = [kw for call, kw in trt.calls if call == "dynamo.compile"]
    assert {"inputs", *kwargs} <= named, sorted(set(kwargs) - named)
    assert kwargs["min_block_size"] == 1
