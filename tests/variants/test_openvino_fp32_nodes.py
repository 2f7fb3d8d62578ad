"""openvino's share of the fp32 fallback: the nodes of the kept module, found by the ONNX export's name scopes, are
marked to keep their original precision (ov::DisablePrecisionConversion through the IR); the others are not. Where
the CPU has bf16 units, the compiled model's runtimePrecision proves the marked nodes ran f32 under the bf16 hint, in
the build and in its saved IR reloaded."""

from __future__ import annotations

import pytest
import torch

from helpers.planted import planted_inputs
from trtbench.measure.kernels import read_openvino
from trtbench.models.planted import planted_net, planted_path

ov = pytest.importorskip("openvino")
BF16_UNITS = "BF16" in ov.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")


@pytest.fixture(scope="module")
def marked(tmp_path_factory):
    from trtbench.variants.openvino import keep_f32, onnx_nodes_in

    path = tmp_path_factory.mktemp("planted") / "planted.onnx"
    torch.onnx.export(planted_net("bf16", 2), planted_inputs(), str(path), dynamo=True, verbose=False)
    nodes = onnx_nodes_in(path, (planted_path(2),))
    core = ov.Core()
    return nodes, core, keep_f32(core, core.read_model(str(path)), nodes)


def test_the_kept_modules_nodes_alone_are_marked(marked):
    from trtbench.variants.openvino import kept_names

    nodes, core, model = marked
    assert {"node_conv2d_3", "node_relu_2", "node_add_2", "node_add_3", "node_sub"} <= nodes  # blocks.2 and its conv
    assert not nodes & {"node_conv2d", "node_conv2d_2", "node_add_1", "node_linear"}  # stem, blocks.1, head
    kept = kept_names(model)
    assert "node_sub" in kept and "node_conv2d_3/WithoutBiases" in kept and "node_conv2d_2" not in kept
    assert {name.split("/")[0] for name in kept} <= nodes
    compiled = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    with torch.inference_mode():
        reference = planted_net("bf16", 2)(*planted_inputs())
    assert torch.allclose(torch.from_numpy(compiled(planted_inputs()[0].numpy())[0]), reference, atol=1e-4)


@pytest.mark.skipif(not BF16_UNITS, reason="this CPU has no bf16 units (neither AVX512-BF16 nor AMX-BF16): "
                                           "OpenVINO computes f32 under any hint; test_kernels.py holds the proof's "
                                           "verdict on a fake runtime model")
def test_under_the_bf16_hint_the_marked_convolution_runs_f32_and_the_rest_bf16(marked, tmp_path):
    from trtbench.variants.openvino import kept_names

    _, core, model = marked
    for source in (model, None):
        if source is None:  # the saved IR keeps the marks
            ov.save_model(model, str(tmp_path / "kept.xml"), compress_to_fp16=False)
            source = core.read_model(str(tmp_path / "kept.xml"))
        compiled = core.compile_model(source, "CPU", {"INFERENCE_PRECISION_HINT": "bf16"})
        compiled(planted_inputs()[0].numpy())
        proof = read_openvino(compiled.get_runtime_model(), kept_names(source))
        assert proof.kept.marked >= 1 and proof.kept.ran_f32 == proof.kept.marked
        assert "bf16" in proof.shares("conv") and proof.contradiction("bf16", native_bf16=True) is None
