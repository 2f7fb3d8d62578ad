"""compiled and aoti at int8, end to end on the trained digits CNN: PT2E (torchao's x86 quantizer)
within the budget, Inductor's int8 kernels, test-set top-1 within 1 point of fp32, and saved files
that really are INT8 and load in a fresh process (the timing workers load them too)."""

from __future__ import annotations

import json

import pytest
import torch
from torch import nn

pytest.importorskip("torchao")

from conftest import run_dict  # noqa: E402
from helpers.int8 import BATCH, digits_config  # noqa: E402
from trained_models import digits_cnn, digits_data, top1  # noqa: E402
from trtbench.quantize.common import QuantSettings  # noqa: E402
from helpers.int8_graphs import fp32_layers_pt2e, is_int8_pt2e  # noqa: E402
from trtbench.quantize.pt2e import quantize_pt2e  # noqa: E402


@pytest.fixture(scope="module")
def pt2e_run(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("pt2e")
    config = digits_config(tmp_path)
    config["variants"] = ["eager", "compiled", "aoti"]
    config["precisions"] = ["int8"]  # eager fp32 is still timed as the baseline; no fp32 compile of either
    config["inputs"][0].update(min_shape=[BATCH, 1, 8, 8], max_shape=[BATCH, 1, 8, 8])  # aoti int8: static shapes
    config["benchmark"]["isolation"] = "process"  # the workers load what was saved: the quantized files
    quantizations = []
    with pytest.MonkeyPatch.context() as patch:  # counts PT2E quantizations (each calibrates and judges)
        import trtbench.variants.pt2e_build as pt2e_build

        within_budget = pt2e_build.quantize_within_budget
        patch.setattr(pt2e_build, "quantize_within_budget",
                      lambda *args: quantizations.append(args) or within_budget(*args))
        outcome = run_dict(config)
    return tmp_path / "out", outcome, len(quantizations)


@pytest.mark.parametrize("variant", ["compiled", "aoti"])
def test_pt2e_int8_rows_are_timed_against_eager_fp32_within_the_budget(pt2e_run, variant):
    _, outcome, _ = pt2e_run
    row = next(r for r in outcome.results if (r.case.variant, r.case.precision) == (variant, "int8"))
    assert row.status == "ok" and row.timed, row.reason
    assert row.accuracy["kind"] == "int8" and row.accuracy["ok"], row.accuracy
    assert outcome.results.baseline(row).case.precision == "fp32" and outcome.results.speedup(row) is not None
    assert row.metrics["isolation"]["method"] == "process"
    info = row.build["info"]
    assert info["accuracy"]["ok"] and info["graph_accuracy"]["ok"] and info["int8"]["fp32_layers"] == []


def test_compiled_and_aoti_build_from_one_quantization(pt2e_run):
    """The model is calibrated and judged by PT2E once, and both variants build from that graph: the same model,
    calibration and budget quantize alike."""
    _, outcome, quantizations = pt2e_run
    assert quantizations == 1, "compiled and aoti at int8 each quantized the model"
    compiled, aoti = (next(r for r in outcome.results if (r.case.variant, r.case.precision) == (variant, "int8"))
                      for variant in ("compiled", "aoti"))
    assert compiled.build["info"]["int8"] == aoti.build["info"]["int8"]


def _top1(call, x, y) -> float:
    """Top-1 of ``call`` over ``x`` in batches of the config's static batch."""
    with torch.inference_mode():
        outputs = [call(x[i:i + BATCH]) for i in range(0, len(x), BATCH)]
    logits = torch.cat([o[0] if isinstance(o, (list, tuple)) else o for o in outputs])
    return float((logits.argmax(1) == y).float().mean())


def _package_calls(path) -> set[str]:
    """The ATen and oneDNN kernels an AOTInductor package's generated C++ calls."""
    import re
    import zipfile

    with zipfile.ZipFile(path) as package:
        source = "".join(package.read(name).decode(errors="replace") for name in package.namelist()
                         if name.endswith(".cpp"))
    return set(re.findall(r"aoti_torch_cpu_\w+", source))


def test_the_saved_files_are_int8_and_keep_test_accuracy(pt2e_run):
    """Both files keep test top-1 within a point of fp32, and both run int8 kernels: the compiled file is the
    quantized graph, and the aoti package calls oneDNN's int8 conv and linear, with no fp32 convolution left
    (a package compiled with grad on skips freezing and keeps aten.convolution between q/dq ops)."""
    out, _, _ = pt2e_run
    import torch.ao.quantization.fx._decomposed  # noqa: F401  (the ops the saved graph calls)
    from torch._inductor import aoti_load_package

    program = torch.export.load(str(out / "artifacts" / "compiled_int8.pt2"))
    assert is_int8_pt2e(program.module()), "the compiled variant's file is the quantized graph"
    _, _, test_x, test_y = digits_data()
    whole = len(test_x) // BATCH * BATCH  # the aoti package takes the static batch only
    test_x, test_y = test_x[:whole], test_y[:whole]
    fp32 = top1(digits_cnn(), test_x, test_y)
    assert abs(_top1(program.module(), test_x, test_y) - fp32) <= 0.01
    package = out / "artifacts" / "aoti_int8.pt2"
    calls = _package_calls(package)
    assert {"aoti_torch_cpu__qconv_pointwise_tensor", "aoti_torch_cpu__qlinear_pointwise_tensor"} <= calls, calls
    assert "aoti_torch_cpu_convolution" not in calls, calls
    assert abs(_top1(aoti_load_package(str(package)), test_x, test_y) - fp32) <= 0.01


def test_aoti_int8_of_a_dynamic_batch_is_skipped_with_the_versions_and_the_fix(tiny_config):
    """A dynamic dim: the frozen int8 package would compute wrong outputs (torch 2.14.1, torchao 0.18), so the
    row is skipped before quantizing, saying why and what to change."""
    from trtbench.config.config import config_from_dict
    from trtbench.quantize.common import QuantizationUnavailable
    from trtbench.variants import BuildContext, get_variant

    specs = config_from_dict(tiny_config).inputs
    assert specs[0].min_shape != specs[0].max_shape
    ctx = BuildContext(device=torch.device("cpu"), precision="int8", dtype=torch.float32, example_inputs=(),
                       shape_inputs={}, input_specs=specs)
    with pytest.raises(QuantizationUnavailable) as raised:
        get_variant("aoti").build(nn.Identity(), ctx)
    assert f"torch {torch.__version__}" in raised.value.reason and "min_shape = opt_shape = max_shape" in \
        raised.value.reason and specs[0].name in raised.value.reason


def test_a_quantizer_that_returns_fp32_fails_the_int8_check():
    """is_int8_pt2e is what the file test holds: a float export of the model is not int8."""
    model = digits_cnn()
    assert not is_int8_pt2e(torch.export.export(model, (torch.zeros(2, 1, 8, 8),)).module())


@pytest.fixture(scope="module")
def verified(pt2e_run) -> dict[str, dict]:
    """``trtbench verify`` of the run's output folder (each file loaded and run in a fresh process): file -> row."""
    from trtbench.artifacts.store import verify_manifest

    out, _, _ = pt2e_run
    return {row["file"]: row for row in verify_manifest(out)}


def test_trtbench_verify_reloads_the_int8_files_in_a_fresh_process(pt2e_run, verified):
    """The manifest names what the quantized graph's loader needs (torch's quantized_decomposed ops)."""
    out, _, _ = pt2e_run
    rows = verified
    assert {"compiled_int8.pt2", "aoti_int8.pt2"} <= set(rows)
    assert all(row["ok"] for row in rows.values()), rows
    manifest = json.loads((out / "artifacts" / "manifest.json").read_text())
    compiled = next(a for a in manifest["artifacts"] if a["file"] == "compiled_int8.pt2")
    assert compiled["imports"] == ["torch.ao.quantization.fx._decomposed",
                                   "torchao.quantization.pt2e.quantizer.x86_inductor_quantizer"]
    assert compiled["settings"] == {"compile": {"mode": None, "dynamic": False, "inductor_configs": {"freezing": True}}}


def _mini_resnet() -> nn.Module:
    """Two torchvision BasicBlocks (the second with a strided downsample) on 8/16 channels: ResNet's
    in-place residual add (``out += identity``) and its one ``self.relu`` module called twice per block."""
    from torchvision.models.resnet import BasicBlock

    torch.manual_seed(0)
    downsample = nn.Sequential(nn.Conv2d(8, 16, 1, stride=2, bias=False), nn.BatchNorm2d(16))
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(inplace=True),
                         BasicBlock(8, 8), BasicBlock(8, 16, stride=2, downsample=downsample),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10)).eval()


@pytest.fixture(scope="module")
def mini_resnet_int8() -> torch.fx.GraphModule:
    calibration = [(torch.randn(2, 3, 16, 16),) for _ in range(2)]
    return quantize_pt2e(_mini_resnet(), (torch.randn(2, 3, 16, 16),), calibration, QuantSettings())


def test_pt2e_quantizes_resnet_blocks_with_their_residual_adds(mini_resnet_int8):
    """torchao's x86 quantizer fuses conv + add + relu: both inputs of each residual add are int8, the
    conv's through the conv itself and the identity through its own quantize/dequantize pair."""
    graph = mini_resnet_int8
    assert is_int8_pt2e(graph) and fp32_layers_pt2e(graph) == []
    adds = [node for node in graph.graph.nodes if node.target == torch.ops.aten.add_.Tensor]
    assert len(adds) == 2
    for add in adds:
        conv, identity = add.args
        assert conv.target == torch.ops.aten.conv2d.default
        assert conv.args[1].target == torch.ops.quantized_decomposed.dequantize_per_channel.default
        assert identity.target == torch.ops.quantized_decomposed.dequantize_per_tensor.default


def test_the_fresh_process_check_runs_the_saved_graph_as_compiled(pt2e_run, verified):
    """The compiled variant's file is run in a fresh process compiled as its manifest says (the int8
    kernels), and reproduces the build there within the quantized reload tolerance; without
    ``settings.compile`` the loaded graph runs its quantize/dequantize ops as they are. The file, its reference and
    its manifest entry are the run's own, saved as the variant builds them."""
    from trtbench.artifacts.publish import reload_tolerance
    from trtbench.artifacts.store import read_manifest
    from trtbench.artifacts.verify import load
    from trtbench.config.config import Tolerance
    from trtbench.variants import get_variant

    out, _, _ = pt2e_run
    entry = next(a for a in read_manifest(out)["artifacts"] if a["file"] == "compiled_int8.pt2")
    tolerance = reload_tolerance(Tolerance(atol=1e-5, rtol=5e-3), get_variant("compiled"))  # as the run checks it
    assert entry["tolerance"] == {"atol": tolerance.atol, "rtol": tolerance.rtol} and "compile" in entry["settings"]
    as_compiled = verified[entry["file"]]
    assert as_compiled["ok"], as_compiled
    job = {"loader": "torch.export.load", "path": str(out / "artifacts" / entry["file"])}
    assert isinstance(load(torch, job | {"settings": {}}, "cpu"), torch.nn.Module)  # run as loaded
    assert not isinstance(load(torch, job | {"settings": entry["settings"]}, "cpu"), torch.nn.Module)  # compiled
