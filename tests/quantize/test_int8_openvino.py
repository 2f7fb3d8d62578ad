"""The openvino variant at int8, end to end on the trained digits CNN: NNCF (trtbench.quantize.openvino)
quantizes within the budget, the saved IR really is INT8 (FakeQuantize, or int8 weights), and test-set
top-1 stays within 1 point of fp32. Runs where NNCF and the NNCF quantizer module are installed."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("openvino")
pytest.importorskip("nncf")
pytest.importorskip("trtbench.quantize.openvino")

from conftest import run_dict  # noqa: E402
from helpers.int8 import digits_config  # noqa: E402
from trained_models import digits_cnn, digits_data, top1  # noqa: E402


def test_openvino_int8_keeps_test_accuracy_and_is_really_int8(tmp_path):
    import openvino as ov

    config = digits_config(tmp_path)
    config["variants"] = ["eager", "openvino"]
    outcome = run_dict(config)
    row = next(r for r in outcome.results if (r.case.variant, r.case.precision) == ("openvino", "int8"))
    assert row.status == "ok" and row.timed, row.reason
    assert row.accuracy["kind"] == "int8" and row.accuracy["ok"]
    assert outcome.results.baseline(row).case.precision == "fp32"

    model = ov.Core().read_model(str(tmp_path / "out" / "artifacts" / "openvino_int8.xml"))
    ops = {op.get_type_name() for op in model.get_ops()}
    int8_constants = [op for op in model.get_ops()
                      if op.get_type_name() == "Constant" and op.get_element_type() in (ov.Type.i8, ov.Type.u8)]
    assert "FakeQuantize" in ops or int8_constants, ops

    _, _, test_x, test_y = digits_data()
    compiled = ov.Core().compile_model(model, "CPU")
    logits = torch.from_numpy(compiled(test_x.numpy())[0])
    assert abs(float((logits.argmax(1) == test_y).float().mean()) - top1(digits_cnn(), test_x, test_y)) <= 0.01
