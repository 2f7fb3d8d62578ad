"""openvino's share of the fp32 fallback: the nodes of the kept module, found by the ONNX export's name scopes,
are marked to stay f32 under a lower inference precision (the rt_info of ov::disable_fp16_compression); the others
are not. The bf16 hint itself needs a CPU with bf16 units (tests/pipeline/test_bf16.py skips it elsewhere)."""

from __future__ import annotations

import pytest
import torch

from helpers.planted import planted_inputs
from trtbench.models.planted import planted_net, planted_path

pytest.importorskip("openvino")


def test_the_kept_modules_nodes_alone_are_marked_f32(tmp_path):
    import openvino as ov

    from trtbench.variants.openvino import DISABLE_FP16_COMPRESSION, keep_f32, onnx_nodes_in

    path = tmp_path / "planted.onnx"
    torch.onnx.export(planted_net("bf16", 2), planted_inputs(), str(path), dynamo=True, verbose=False)
    nodes = onnx_nodes_in(path, (planted_path(2),))
    assert {"node_conv2d_3", "node_relu_2", "node_add_2", "node_add_3", "node_sub"} <= nodes  # blocks.2 and its conv
    assert not nodes & {"node_conv2d", "node_conv2d_2", "node_add_1", "node_linear"}  # stem, blocks.1, head
    model = ov.Core().read_model(str(path))
    assert keep_f32(model, nodes) >= len(nodes)
    marked = {op.get_friendly_name() for op in model.get_ops() if DISABLE_FP16_COMPRESSION in op.get_rt_info()}
    assert "node_sub" in marked and "node_conv2d_3/WithoutBiases" in marked and "node_conv2d_2" not in marked
    compiled = ov.Core().compile_model(model, "CPU")
    out = compiled(planted_inputs()[0].numpy())[0]
    with torch.inference_mode():
        assert torch.allclose(torch.from_numpy(out), planted_net("bf16", 2)(*planted_inputs()), atol=1e-4)
