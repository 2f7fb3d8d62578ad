"""bf16 and TensorRT, held against the real torch-tensorrt 2.14.0 wheel's sources (read, never imported): the
dynamo frontend builds strongly typed networks, so ``trt`` at bf16 (a bfloat16 model and inputs) is a bf16
engine; the TorchScript frontend's dtype map has no bf16, so ``trt_traced`` and ``trt_scripted`` skip it."""

from __future__ import annotations

import ast

import torch

import fake_torch_tensorrt as fake_trt
from helpers.trt_wheel import function, wheel  # noqa: F401
from trtbench.core.target import Target
from trtbench.variants import get_variant
from trtbench.variants.trt_common import TS_DTYPES

INTERPRETER = ("torch_tensorrt/dynamo/conversion/_TRTInterpreter.py", "TRTInterpreter.__init__")
DTYPE_TO = ("torch_tensorrt/_enums.py", "dtype.to")


def test_every_dynamo_network_is_strongly_typed(wheel):  # noqa: F811
    source = ast.unparse(function(wheel, INTERPRETER))
    assert "trt.NetworkDefinitionCreationFlag.STRONGLY_TYPED" in source
    assert "flag |= STRONGLY_TYPED" in source and "self.builder.create_network(flag)" in source
    # the one exception, the RTX build, is strongly typed by default (its comment in the same function)
    assert "if not ENABLED_FEATURES.tensorrt_rtx:" in source


def test_the_torchscript_frontend_maps_exactly_trtbench_s_ts_dtypes(wheel):  # noqa: F811
    """The ``_C.dtype`` branch of ``dtype.to``: every ``self == dtype.X`` it maps; bf16 is not among them."""
    branch = next(node for node in ast.walk(function(wheel, DTYPE_TO)) if isinstance(node, ast.If)
                  and ast.unparse(node.test) == "t == _C.dtype")
    mapped = {compare.comparators[0].attr for compare in ast.walk(branch) if isinstance(compare, ast.Compare)
              and ast.unparse(compare.left) == "self" and isinstance(compare.comparators[0], ast.Attribute)}
    assert mapped == {fake_trt.TORCH_DTYPES[dtype] for dtype in TS_DTYPES} | {"unknown"}
    assert "bf16" not in mapped and fake_trt.TORCH_DTYPES[torch.bfloat16] == "bf16"


def test_the_torchscript_variants_skip_bf16_and_name_trt():
    for name in ("trt_traced", "trt_scripted"):
        reason = get_variant(name).unavailable_reason(Target(torch.device("cuda"), "bf16"))
        assert "TorchScript frontend takes no bf16" in reason and "list trt" in reason
