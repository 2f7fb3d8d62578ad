"""The diagnose harness on small CNNs with a planted fault (the built-in planted_net, trtbench/models/planted.py):
the exact module path named by taps and by splice on eager and exported, at bf16 (a resolution fault) and fp16 (a
range fault: eager fp16 on the CPU, for accuracy only), at two positions each, and on traced at one (ort,
openvino, compiled and aoti build an ONNX export or an Inductor compile per build, too slow for the suite:
``benchmarks/diagnose_cost.py --planted``);
nothing named on the clean net; the build count announced equal to the count made; the budget; INT8's agreement
with the fallback; the precision the whole build's kernels ran, in the diagnosis, its JSON and its report section.
The command: tests/test_cli.py."""

from __future__ import annotations

import pytest
import torch

from helpers.planted import planted_inputs
from trtbench.config.config import Tolerance
from trtbench.core.env import bf16_compute
from trtbench.report.diagnosis import diagnosis_table
from trtbench.diagnose.build import Recipe
from trtbench.diagnose.graph import LayerGraph
from trtbench.diagnose.harness import Settings, diagnose, tolerance_judge
from trtbench.diagnose.splice import splice_count
from trtbench.models.planted import BLOCKS, planted_net, planted_path

CPU = torch.device("cpu")
TOLERANCE = Tolerance(atol=1e-3, rtol=5e-2)  # fp16's default, for bf16 too here


def settings(lines: list, minutes: float = 5.0) -> Settings:
    return Settings(tolerance_judge(TOLERANCE), minutes, lines.append)


def test_layers_are_module_paths_in_graph_order_and_every_split_rebuilds_the_model():
    model, inputs = planted_net(None, 0), planted_inputs()
    graph = LayerGraph(model, inputs)
    paths = [layer.path for layer in graph.layers]
    assert paths[:3] == ["stem", "blocks.0.conv", "blocks.0"] and paths[-1] == "head"
    assert len(paths) == 2 * BLOCKS + 3  # stem, (conv, the block's own ops) per block, mean, head
    with torch.inference_mode():
        reference = model(*inputs)
        assert torch.equal(graph.tapped()(*inputs)[0], reference)
        for boundary in range(len(paths) + 1):
            prefix, suffix = graph.split(boundary)
            assert torch.equal(suffix(*inputs, *prefix(*inputs)), reference), boundary


@pytest.mark.parametrize("variant", ["eager", "exported"])
@pytest.mark.parametrize("fault", ["bf16", "fp16"])
@pytest.mark.parametrize("at", [1, 3])
def test_the_planted_fault_is_named_by_tap_and_by_splice(variant, fault, at):
    lines: list[str] = []
    diagnosis = diagnose(planted_net(fault, at), planted_inputs(), Recipe(variant, fault, CPU), settings(lines))
    assert diagnosis.status == "diverges", diagnosis.reason
    assert diagnosis.taps.named == planted_path(at) and diagnosis.splices.layer == planted_path(at), diagnosis.to_dict()
    assert diagnosis.confirmed and planted_path(at) in diagnosis.sentence()
    layers = 2 * BLOCKS + 3
    assert diagnosis.builds == diagnosis.builds_announced == 2 + splice_count(layers)
    assert sum(int(line.split(": ")[1].split()[0]) for line in lines if "build(s)" in line) == diagnosis.builds
    named = next(e for e in diagnosis.layers if e.path == planted_path(at))
    upstream = [e for e in diagnosis.layers[:diagnosis.layers.index(named)] if e.own_sqnr_db != float("inf")]
    assert all(e.own_sqnr_db > named.own_sqnr_db + 20 for e in upstream)
    if fault == "fp16":
        assert named.own_sqnr_db == float("-inf") and "range" in diagnosis.sentence()


@pytest.mark.parametrize("fault", ["bf16", "fp16"])
def test_traced_names_it_too(fault):
    diagnosis = diagnose(planted_net(fault, 3), planted_inputs(), Recipe("traced", fault, CPU), settings([]))
    assert diagnosis.named == diagnosis.taps.named == planted_path(3), diagnosis.to_dict()


def test_the_clean_net_names_no_layer_at_bf16():
    lines: list[str] = []
    diagnosis = diagnose(planted_net(None, 0), planted_inputs(), Recipe("eager", "bf16", CPU), settings(lines))
    assert diagnosis.status == "agrees" and diagnosis.named is None and diagnosis.taps.named is None
    assert diagnosis.builds == diagnosis.builds_announced == 2
    assert "Nothing diverges" in diagnosis.sentence()
    healthy = [e.own_sqnr_db for e in diagnosis.layers if e.own_sqnr_db != float("inf")]
    assert 30 < min(healthy) and max(healthy) < 80  # near bf16's 2^-9, far from fp32's


def test_the_whole_builds_kernels_are_shown_in_the_diagnosis_its_json_and_its_section():
    """fp32's kernels are read on every CPU: oneDNN's f32 convolutions, named in the diagnosis and shown."""
    diagnosis = diagnose(planted_net(None, 0), planted_inputs(), Recipe("eager", "fp32", CPU), settings([]))
    assert diagnosis.status == "agrees" and diagnosis.kernels.source == "oneDNN verbose", diagnosis.to_dict()
    assert diagnosis.kernels.shares("conv") == {"f32": 1.0}
    text = diagnosis.kernels.text
    assert "conv f32 100%" in text and diagnosis.to_dict()["kernels"]["text"] == text
    assert f"Kernels of the whole build (oneDNN verbose): {text}." in diagnosis_table(diagnosis)


def test_at_bf16_the_kernels_name_the_bf16_units_they_ran_on():
    compute = bf16_compute(CPU)
    if compute.mode != "native":
        pytest.skip(f"no bf16 units to name here ({compute.why})")
    diagnosis = diagnose(planted_net(None, 0), planted_inputs(), Recipe("eager", "bf16", CPU), settings([]))
    assert diagnosis.kernels.shares("conv") == {"bf16": 1.0}, diagnosis.kernels
    assert diagnosis.kernels.contradiction("bf16", native_bf16=True) is None
    assert "conv bf16 100%" in diagnosis_table(diagnosis)


def test_the_budget_stops_it_with_the_reason():
    diagnosis = diagnose(planted_net("bf16", 1), planted_inputs(), Recipe("eager", "bf16", CPU), settings([], 0.0))
    assert diagnosis.status == "stopped" and "budget of 0 min" in diagnosis.reason and diagnosis.kernels is None
    assert "Not diagnosed" in diagnosis.sentence()


def test_a_path_that_cannot_run_the_precision_says_why():
    diagnosis = diagnose(planted_net(None, 0), planted_inputs(), Recipe("traced", "int8", CPU), settings([]))
    assert diagnosis.status == "unavailable" and "no int8 path" in diagnosis.reason and diagnosis.builds == 0


def test_openvino_reaches_bf16_by_its_hint_and_says_why_where_the_cpu_has_no_bf16_units():
    if bf16_compute(CPU).mode == "native":
        pytest.skip("this CPU has bf16 units: openvino runs bf16 (benchmarks/diagnose_cost.py --planted)")
    diagnosis = diagnose(planted_net("bf16", 1), planted_inputs(), Recipe("openvino", "bf16", CPU), settings([]))
    assert diagnosis.status == "unavailable" and "no bf16 kernels" in diagnosis.reason and diagnosis.builds == 0


def test_at_int8_the_largest_own_errors_are_the_layers_int8s_fallback_keeps_in_fp32():
    """ORT's INT8 of the trained digits CNN with a planted outlier channel: its fallback keeps exactly
    SENSITIVE_LAYERS in fp32 (tests/quantize/test_int8_ort.py); ranked by own error, they come first here."""
    pytest.importorskip("onnxruntime")
    from trained_models import SENSITIVE_LAYERS, digits_data, sensitive_digits_cnn
    from trtbench.config.config import Int8Budget
    from trtbench.diagnose.floor import ranked
    from trtbench.quantize.calibration import CalibrationData
    from trtbench.quantize.common import QuantSettings
    from trtbench.quantize.setup import Int8Setup

    train_x, _, test_x, test_y = digits_data()
    data = CalibrationData([(train_x[i:i + 50],) for i in range(0, 200, 50)], [(test_x[:64],)], test_y[:64])
    setup = Int8Setup(data, Int8Budget(), QuantSettings(), 2, references=[])
    diagnosis = diagnose(sensitive_digits_cnn(), (test_x[:64],), Recipe("ort", "int8", CPU, int8=setup),
                         Settings(tolerance_judge(Int8Budget()), 5.0, [].append))
    assert diagnosis.status == "diverges", diagnosis.reason
    assert {e.path for e in ranked(diagnosis.layers)[:len(SENSITIVE_LAYERS)]} == set(SENSITIVE_LAYERS), \
        diagnosis.to_dict()
    assert diagnosis.named in SENSITIVE_LAYERS and diagnosis.builds == diagnosis.builds_announced
    assert diagnosis.kernels.source == "ONNX Runtime profile" and "i8" in diagnosis.kernels.shares("conv"), \
        diagnosis.kernels
