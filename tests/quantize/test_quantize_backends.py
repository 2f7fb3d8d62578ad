"""INT8 through each CPU backend's own quantizer (NNCF for OpenVINO, torchao PT2E for compiled/aoti),
judged on a CNN with learned weights (tests/assets/trained_models.py): test-set top-1 within a point
of fp32, the artifacts really int8, exclusion keeping the named layers fp32, and the planted outlier
breaking full INT8 until its layers are kept in fp32. The AOTInductor package of the PT2E graph (its int8 kernels,
its test-set top-1): tests/quantize/test_int8_pt2e.py, which builds it in a run."""

from __future__ import annotations

import math
import sys

import pytest
import torch

from trained_models import SENSITIVE_LAYERS, digits_cnn, digits_data, sensitive_digits_cnn
from trtbench.quantize.common import QuantizationUnavailable, QuantSettings

ov = pytest.importorskip("openvino")
from trtbench.quantize import openvino as qov  # noqa: E402
from trtbench.quantize import pt2e  # noqa: E402
from helpers import int8_graphs as graphs  # noqa: E402

SQNR_DB_MIN = 20.0  # the int8 budget's default (issue 15)
TOP1_AGREE_MIN = 0.99


def sqnr_db(reference: torch.Tensor, output: torch.Tensor) -> float:
    return (10 * torch.log10(reference.pow(2).sum() / (reference - output).pow(2).sum())).item()


def agreement(reference: torch.Tensor, output: torch.Tensor) -> float:
    return (reference.argmax(1) == output.argmax(1)).float().mean().item()


def accuracy(output: torch.Tensor, labels: torch.Tensor) -> float:
    return (output.argmax(1) == labels).float().mean().item()


@pytest.fixture(scope="module")
def data():
    return digits_data()


@pytest.fixture(scope="module")
def calibration(data):
    train_x = data[0]
    return [(train_x[start:start + 50],) for start in range(0, 300, 50)]  # 300 training images


@pytest.fixture(scope="module")
def reference(data):
    """The fp32 outputs on the test set of the trained model and its planted twin, by name."""
    with torch.no_grad():
        return {name: make()(data[2]) for name, make in (("digits", digits_cnn), ("sensitive", sensitive_digits_cnn))}


def test_the_planted_model_equals_the_trained_one_in_fp32(reference):
    assert agreement(reference["digits"], reference["sensitive"]) == 1.0
    assert sqnr_db(reference["digits"], reference["sensitive"]) > 60


# --- OpenVINO + NNCF ------------------------------------------------------------------------------

def to_openvino(model, data):
    return ov.convert_model(model, example_input=data[2][:1], input=[(-1, 1, 8, 8)])


def run_openvino(ov_model, x: torch.Tensor) -> torch.Tensor:
    return torch.from_numpy(ov.Core().compile_model(ov_model, "CPU")(x.numpy())[0])


def saved_and_read(ov_model, tmp_path):
    """The IR as the openvino variant saves it, read back."""
    ov.save_model(ov_model, tmp_path / "model.xml")
    return ov.Core().read_model(tmp_path / "model.xml")


@pytest.fixture(scope="module")
def nncf_digits(data, calibration):
    """The trained CNN's IR quantized by NNCF with the default settings (per-channel weights, minmax)."""
    return qov.quantize_openvino(to_openvino(digits_cnn(), data), calibration, QuantSettings())


def test_nncf_int8_keeps_test_top1_within_a_point_and_is_really_int8(data, reference, nncf_digits, tmp_path):
    quantized = saved_and_read(nncf_digits, tmp_path)
    out = run_openvino(quantized, data[2])
    print(f"\nNNCF digits: top-1 int8 {accuracy(out, data[3]):.4f} fp32 {accuracy(reference['digits'], data[3]):.4f}, "
          f"agreement {agreement(reference['digits'], out):.4f}, SQNR {sqnr_db(reference['digits'], out):.1f} dB")
    assert accuracy(out, data[3]) >= accuracy(reference["digits"], data[3]) - 0.01
    assert sqnr_db(reference["digits"], out) > SQNR_DB_MIN
    assert graphs.is_int8_openvino(quantized)
    assert graphs.fp32_layers_openvino(quantized) == []
    types = {op.get_type_name() for op in quantized.get_ordered_ops()}
    assert "FakeQuantize" in types  # activations
    assert any(op.get_type_name() == "Constant" and op.get_output_element_type(0).get_type_name() == "i8"
               for op in quantized.get_ordered_ops())  # weights


def test_the_fp32_ir_is_not_int8(data, tmp_path):
    fp32 = saved_and_read(to_openvino(digits_cnn(), data), tmp_path)
    assert not graphs.is_int8_openvino(fp32)
    assert graphs.fp32_layers_openvino(fp32) == qov.quantizable_layers_openvino(fp32)
    assert len(qov.quantizable_layers_openvino(fp32)) == 3  # conv1, conv2, fc


def test_nncf_keeps_excluded_operations_in_fp32(data, calibration, tmp_path):
    fp32 = to_openvino(digits_cnn(), data)
    (conv2,) = graphs.layers_of_modules(fp32, ["conv2"])
    quantized = saved_and_read(qov.quantize_openvino(fp32, calibration, QuantSettings(exclude=(conv2,))), tmp_path)
    assert graphs.fp32_layers_openvino(quantized) == [conv2]
    assert graphs.is_int8_openvino(quantized)


def test_nncf_rejects_an_operation_the_model_lacks(data, calibration):
    with pytest.raises(ValueError, match="not quantizable operations"):
        qov.quantize_openvino(to_openvino(digits_cnn(), data), calibration, QuantSettings(exclude=("conv9",)))


def test_the_planted_outlier_breaks_nncf_int8_until_its_layers_stay_fp32(data, calibration, reference):
    fp32 = to_openvino(sensitive_digits_cnn(), data)
    full = run_openvino(qov.quantize_openvino(fp32, calibration, QuantSettings()), data[2])
    planted = tuple(graphs.layers_of_modules(fp32, SENSITIVE_LAYERS))
    kept = run_openvino(qov.quantize_openvino(fp32, calibration, QuantSettings(exclude=planted)), data[2])
    ref = reference["sensitive"]
    print(f"\nNNCF sensitive: full int8 agreement {agreement(ref, full):.4f} SQNR {sqnr_db(ref, full):.2f} dB; "
          f"{SENSITIVE_LAYERS} in fp32: agreement {agreement(ref, kept):.4f} SQNR {sqnr_db(ref, kept):.1f} dB")
    assert agreement(ref, full) < 0.5 and sqnr_db(ref, full) < 5
    assert agreement(ref, kept) >= TOP1_AGREE_MIN and sqnr_db(ref, kept) > SQNR_DB_MIN


def test_nncf_accuracy_control_reverts_the_planted_layers(data, calibration, reference):
    fp32 = to_openvino(sensitive_digits_cnn(), data)
    test_x, test_y = data[2], data[3]
    validation = [(test_x[start:start + 100], test_y[start:start + 100]) for start in range(0, len(test_y), 100)]

    def top1(compiled, items) -> float:
        right = sum((torch.from_numpy(compiled(x.numpy())[0]).argmax(1) == y).sum().item() for x, y in items)
        return right / sum(len(y) for _, y in items)

    control = graphs.AccuracyControl(validation, top1, max_drop=0.01)
    model, kept = graphs.quantize_openvino_with_accuracy_control(fp32, calibration, control)
    out = run_openvino(model, test_x)
    print(f"\nNNCF accuracy control on the sensitive model: kept in fp32 {kept}; top-1 {accuracy(out, test_y):.4f} "
          f"(fp32 {accuracy(reference['sensitive'], test_y):.4f}), SQNR {sqnr_db(reference['sensitive'], out):.1f} dB")
    assert kept and set(kept) <= set(graphs.layers_of_modules(fp32, SENSITIVE_LAYERS))
    assert accuracy(out, test_y) >= accuracy(reference["sensitive"], test_y) - 0.01
    assert graphs.is_int8_openvino(model)


@pytest.mark.parametrize("method", ["entropy", "percentile"])
def test_every_calibration_method_quantizes_within_a_point(data, calibration, reference, method):
    """minmax (the default) is covered above; NNCF maps these to HISTOGRAM / MEAN_QUANTILE, PT2E both
    to HistogramObserver."""
    settings = QuantSettings(method=method)
    nncf_model = qov.quantize_openvino(to_openvino(digits_cnn(), data), calibration, settings)
    pt2e_model = pt2e.quantize_pt2e(digits_cnn(), (data[2][:4],), calibration, settings)
    with torch.no_grad():
        outputs = {"nncf": run_openvino(nncf_model, data[2]), "pt2e": pt2e_model(data[2])}
    fp32 = accuracy(reference["digits"], data[3])
    assert {name: accuracy(out, data[3]) >= fp32 - 0.01 for name, out in outputs.items()} == {"nncf": True,
                                                                                              "pt2e": True}
    assert graphs.is_int8_openvino(nncf_model) and graphs.is_int8_pt2e(pt2e_model)


def weight_scale_sizes(ov_model) -> list[int]:
    """Element counts of the scales that dequantize NNCF's int8 weights (Constant i8 -> Convert -> Multiply)."""
    sizes = []
    for op in ov_model.get_ordered_ops():
        source = op.input(0).get_source_output().get_node() if op.get_type_name() == "Multiply" else None
        if source is not None and source.get_type_name() == "Convert" and \
                source.input(0).get_source_output().get_node().get_output_element_type(0).get_type_name() == "i8":
            sizes.append(math.prod(op.input(1).get_source_output().get_node().get_output_shape(0)))
    return sizes


def test_nncf_weights_are_per_channel_unless_told_otherwise(data, calibration, nncf_digits):
    fp32 = to_openvino(digits_cnn(), data)
    per_channel = weight_scale_sizes(nncf_digits)
    per_tensor = weight_scale_sizes(qov.quantize_openvino(fp32, calibration, QuantSettings(per_channel=False)))
    assert per_channel == [16, 32, 10]  # one scale per output channel of conv1, conv2, fc
    assert per_tensor == [1, 1, 1]


# --- torchao PT2E (compiled, aoti) ----------------------------------------------------------------

@pytest.fixture(scope="module")
def pt2e_digits(data, calibration):
    return pt2e.quantize_pt2e(digits_cnn(), (data[2][:4],), calibration, QuantSettings())


def test_pt2e_int8_keeps_test_top1_within_a_point_and_is_really_int8(data, reference, pt2e_digits):
    with torch.inference_mode():
        out = pt2e_digits(data[2])
    print(f"\nPT2E digits: top-1 int8 {accuracy(out, data[3]):.4f} fp32 {accuracy(reference['digits'], data[3]):.4f}, "
          f"agreement {agreement(reference['digits'], out):.4f}, SQNR {sqnr_db(reference['digits'], out):.1f} dB")
    assert accuracy(out, data[3]) >= accuracy(reference["digits"], data[3]) - 0.01
    assert graphs.is_int8_pt2e(pt2e_digits)
    assert graphs.fp32_layers_pt2e(pt2e_digits) == []
    targets = {str(n.target) for n in pt2e_digits.graph.nodes if n.op == "call_function"}
    assert {"quantized_decomposed.quantize_per_tensor.default", "quantized_decomposed.dequantize_per_channel.default"} \
        <= targets


def test_the_fp32_graph_is_not_int8(data):
    model = digits_cnn()
    graph = torch.export.export(model, (data[2][:4],)).module()
    assert not graphs.is_int8_pt2e(graph)
    assert graphs.fp32_layers_pt2e(graph) == pt2e.quantizable_layers_pt2e(model) == ["conv1", "conv2", "fc"]


def test_pt2e_keeps_excluded_modules_in_fp32(data, calibration):
    quantized = pt2e.quantize_pt2e(digits_cnn(), (data[2][:4],), calibration, QuantSettings(exclude=("conv2",)))
    assert graphs.fp32_layers_pt2e(quantized) == ["conv2"]
    assert graphs.is_int8_pt2e(quantized)


def test_pt2e_rejects_a_module_the_model_lacks(data, calibration):
    with pytest.raises(ValueError, match="not quantizable layers"):
        pt2e.quantize_pt2e(digits_cnn(), (data[2][:4],), calibration, QuantSettings(exclude=("pool",)))


def test_the_planted_outlier_breaks_pt2e_int8_until_its_layers_stay_fp32(data, calibration, reference):
    model, example = sensitive_digits_cnn(), (data[2][:4],)
    full = pt2e.quantize_pt2e(model, example, calibration, QuantSettings())
    kept = pt2e.quantize_pt2e(model, example, calibration, QuantSettings(exclude=SENSITIVE_LAYERS))
    with torch.inference_mode():
        full_out, kept_out = full(data[2]), kept(data[2])
    ref = reference["sensitive"]
    print(f"\nPT2E sensitive: full int8 agreement {agreement(ref, full_out):.4f} SQNR {sqnr_db(ref, full_out):.2f} dB; "
          f"{SENSITIVE_LAYERS} in fp32: agreement {agreement(ref, kept_out):.4f} SQNR {sqnr_db(ref, kept_out):.1f} dB")
    assert agreement(ref, full_out) < 0.5 and sqnr_db(ref, full_out) < 5
    assert agreement(ref, kept_out) >= TOP1_AGREE_MIN and sqnr_db(ref, kept_out) > SQNR_DB_MIN


def test_torch_compile_lowers_the_pt2e_graph_to_int8_kernels_at_every_shape(data, pt2e_digits):
    """As the compiled variant runs it: under inference_mode, the first call compiles, then other shapes."""
    from torch._inductor.utils import run_and_get_code

    torch._dynamo.reset()
    compiled = pt2e.CompiledPT2E(pt2e_digits)
    with torch.inference_mode():
        out, code = run_and_get_code(compiled, data[2])
        assert compiled(data[2][:3]).shape == (3, 10)  # another shape recompiles
        expected = pt2e_digits(data[2])
    source = "\n".join(code)
    assert "onednn.qconv_pointwise" in source and "onednn.qlinear_pointwise" in source
    assert agreement(expected, out) >= TOP1_AGREE_MIN
    assert not torch._inductor.config.freezing  # left as it was for the rest of the process


def test_pt2e_refuses_per_tensor_weights_that_inductor_would_not_run_in_int8(data, calibration):
    with pytest.raises(QuantizationUnavailable, match="per-channel"):
        pt2e.quantize_pt2e(digits_cnn(), (data[2][:4],), calibration, QuantSettings(per_channel=False))


def test_a_torchao_that_does_not_import_is_unavailable_with_the_versions_tried(monkeypatch, data, calibration):
    import torchao

    monkeypatch.setitem(sys.modules, "torchao.quantization.pt2e.quantize_pt2e", None)  # import raises ImportError
    with pytest.raises(QuantizationUnavailable) as raised:
        pt2e.quantize_pt2e(digits_cnn(), (data[2][:4],), calibration, QuantSettings())
    assert f"torchao {torchao.__version__}" in raised.value.reason
    assert f"torch {torch.__version__}" in raised.value.reason
