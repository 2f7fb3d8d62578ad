"""bf16 as a precision of the vision variants, run here for real through the CLI: torch paths built from a bfloat16
copy of the model, timed beside eager fp32 and eager bf16, each row marked native or emulated; ort and openvino
skipped with what their runtime lacks on this CPU; the tolerances, ceilings and report that go with it."""

from __future__ import annotations

import json

import pytest
import torch

from trtbench.cli import main
from trtbench.core.env import bf16_compute

NATIVE_HERE = bf16_compute("cpu").mode == "native"


@pytest.fixture(scope="module")
def bf16_run(tmp_path_factory):
    """One run at fp32 and bf16 of eager, traced, exported, ort and openvino, timed in this process (a worker's
    rebuild at bf16: tests/building/test_bf16_recipe.py)."""
    import copy

    import yaml
    from conftest import TINY_CONFIG

    out = tmp_path_factory.mktemp("bf16")
    config = copy.deepcopy(TINY_CONFIG)
    config.update(precisions=["fp32", "bf16"], variants=["eager", "traced", "exported", "ort", "openvino"])
    config["benchmark"].update(shapes=["opt"])
    config["output"] = {"dir": str(out / "out"), "save_artifacts": True, "cold_start": False}
    path = out / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    code = main(["--config", str(path), "--quiet"])
    return code, out / "out"


def rows(folder) -> dict:
    doc = json.loads((folder / "results.json").read_text())
    return {(r["case"]["variant"], r["case"]["precision"]): r for r in doc["records"]}, doc


def test_torch_paths_run_bf16_marked_native_or_emulated(bf16_run):
    code, folder = bf16_run
    assert code == 0
    records, _ = rows(folder)
    for variant in ("eager", "traced", "exported"):
        record = records[(variant, "bf16")]
        assert record["status"] == "ok", record["reason"]
        assert record["build"]["info"]["bf16"].startswith("native" if NATIVE_HERE else "emulated")
        parity = record["parity"]
        assert parity["ok"] and (parity["atol"], parity["rtol"]) == (1e-2, 1e-1)  # bf16's default tolerances
        assert 0 < parity["max_rel_err"] < 0.05  # bf16 rounding, not fp32's exact match
        assert "bf16" not in records[(variant, "fp32")]["build"]["info"]


def test_every_row_shows_the_precision_its_kernels_ran(bf16_run):
    records, _ = rows(bf16_run[1])
    for (variant, precision), record in records.items():
        if record["status"] != "ok":
            continue
        kernels = record["metrics"]["kernels"]
        assert kernels["source"] == {"ort": "ONNX Runtime profile", "openvino": "OpenVINO runtimePrecision"}.get(
            variant, "oneDNN verbose")
        conv = {g["precision"] for g in kernels["groups"] if g["op"] == "conv"}
        assert conv <= ({"f32"} if precision == "fp32" else {"bf16"}), (variant, precision, kernels["text"])
    assert records[("eager", "fp32")]["metrics"]["kernels"]["text"].startswith("conv f32 100%")
    if NATIVE_HERE:  # native bf16 convolutions on bf16 units, in torch and in OpenVINO
        assert records[("openvino", "bf16")]["status"] == "ok"
        for variant in ("eager", "exported", "openvino"):
            groups = records[(variant, "bf16")]["metrics"]["kernels"]["groups"]
            assert groups and all("bf16" in g["isa"] or "amx" in g["isa"] for g in groups), (variant, groups)
    report = (bf16_run[1] / "report.md").read_text()
    assert "kernels (read from the runtime)" in report


@pytest.mark.skipif(NATIVE_HERE, reason="checks the skips of a CPU without bf16 units")
def test_ort_and_openvino_are_skipped_naming_what_is_missing(bf16_run):
    records, _ = rows(bf16_run[1])
    ort, openvino = records[("ort", "bf16")], records[("openvino", "bf16")]
    assert ort["status"] == "skipped" and "CPUExecutionProvider has no bf16" in ort["reason"]
    assert "tensor(bfloat16)" in ort["reason"] or "Could not find an implementation" in ort["reason"]
    assert openvino["status"] == "skipped" and "no bf16 kernels" in openvino["reason"]
    assert "AVX512-BF16" in openvino["reason"] and "AMX-BF16" in openvino["reason"]
    assert records[("ort", "fp32")]["status"] == "ok" and records[("openvino", "fp32")]["status"] == "ok"


def test_bf16_rows_are_compared_with_eager_fp32_and_eager_bf16(bf16_run):
    folder = bf16_run[1]
    report = (folder / "report.md").read_text()
    mode = "native" if NATIVE_HERE else "emulated"
    assert f"bf16 ({mode})" in report and "vs eager same precision" in report
    if not NATIVE_HERE:
        assert "bf16 (emulated) for eager, exported, traced" in report
    _, doc = rows(folder)
    assert {c["dtype"] for c in doc["ceilings"]} == {"float32", "bfloat16"}


def test_bf16_files_are_published_against_bf16_tolerances(bf16_run):
    from trtbench.artifacts.store import read_manifest

    entries = read_manifest(bf16_run[1])["artifacts"]
    published = {(e["variant"], e["precision"]): e["tolerance"] for e in entries}
    assert published[("traced", "bf16")] == published[("exported", "bf16")] == {"atol": 1e-2, "rtol": 1e-1}
    assert published[("traced", "fp32")] == {"atol": 1e-5, "rtol": 5e-3}


def test_the_openvino_build_reads_back_its_precision():
    """The openvino build at bf16 compiles fp32's model with the bf16 hint and is Unavailable (skipped) when
    the plugin reads back f32: run for real, past the check that skips it before building."""
    from trtbench.core.errors import Unavailable
    from trtbench.core.inputs import InputConfig
    from trtbench.variants import BuildContext, get_variant

    openvino = pytest.importorskip("openvino")
    if "BF16" in openvino.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES"):
        pytest.skip("this CPU computes bf16 in OpenVINO")
    model = __import__("toy_models").tiny_cnn().eval()
    example = (torch.randn(2, 3, 16, 16),)
    spec = InputConfig(min_shape=[2, 3, 16, 16], opt_shape=[2, 3, 16, 16], max_shape=[2, 3, 16, 16])
    ctx = BuildContext(device=torch.device("cpu"), precision="fp32", dtype=torch.float32, example_inputs=example,
                       shape_inputs={"opt": example}, input_specs=[spec])
    for name in ("exported", "onnx"):
        ctx.built[name] = get_variant(name).build(model, ctx)
    ctx.precision = "bf16"  # the hinted pass: fp32's model, inputs and onnx, at precision bf16
    with pytest.raises(Unavailable, match="read back inference precision f32 for the bf16 hint"):
        get_variant("openvino").build(model, ctx)
