"""int8 as a precision: which variants have an INT8 path, how int8 rows share their build group (and
so their interleaved rounds) with eager fp32, and that eager fp32 is their baseline."""

from __future__ import annotations

import dataclasses

import pytest

from conftest import run_dict
from trtbench.core.case import Case
from trtbench.config.config import config_from_dict
from trtbench.core.errors import UserInputError
from trtbench.config.plan import resolve
from trtbench.core.record import Record
from trtbench.results.resultset import ResultSet


def test_int8_shares_the_fp32_group_and_variants_without_an_int8_path_are_skipped(tiny_config):
    tiny_config["precisions"] = ["fp32", "int8"]
    tiny_config["variants"] = ["eager", "traced", "scripted", "exported"]
    (group,) = resolve(config_from_dict(tiny_config)).groups
    assert group.precisions == ["fp32", "int8"]
    cases = group.cases()
    assert {(c.variant, c.precision) for c in cases} == {
        (v, p) for v in ("eager", "traced", "scripted", "exported") for p in ("fp32", "int8")}
    for name in ("eager", "traced", "scripted", "exported"):
        assert "has no INT8 path" in group.unavailable[f"{name}@int8"]
        assert name not in group.unavailable  # at fp32 they all run


def test_int8_alone_still_times_eager_fp32_as_its_reference(tiny_config):
    tiny_config["precisions"] = ["int8"]
    tiny_config["variants"] = ["eager", "traced"]
    (group,) = resolve(config_from_dict(tiny_config)).groups
    assert group.precisions == ["fp32", "int8"] and group.listed == ["int8"]
    assert {(c.variant, c.precision) for c in group.cases() if c.point == "opt"} == {
        ("eager", "fp32"), ("eager", "int8"), ("traced", "int8")}


def test_sweep_precisions_take_int8(tiny_config):
    tiny_config["sweep"] = {"precisions": ["fp32", "int8"]}
    assert config_from_dict(tiny_config).precisions == ["fp32", "int8"]
    tiny_config["sweep"] = {"precisions": ["int4"]}
    with pytest.raises(UserInputError) as info:
        config_from_dict(tiny_config)
    assert info.value.where == "sweep.precisions[0]"


def _record(variant: str, precision: str, median: float, status: str = "ok") -> Record:
    case = Case(model="m", variant=variant, precision=precision, point="opt", input_shapes=((2, 1, 8, 8),),
                threads=2, device="cpu")
    rounds = [[median * f for f in (0.98, 1.0, 1.03)] for _ in range(4)] if status == "ok" else []
    return Record(case=case, environment="e", status=status, rounds=rounds)


def test_the_baseline_of_an_int8_row_is_eager_fp32():
    results = ResultSet()
    eager = _record("eager", "fp32", 10.0)
    for record in (eager, _record("eager", "int8", 0, "skipped"), _record("ort", "int8", 5.0)):
        results.add(record)
    int8 = next(r for r in results if r.case.variant == "ort")
    assert results.baseline(int8) is eager
    assert results.speedup(int8).value == pytest.approx(2.0)


def test_int8_rows_are_timed_in_the_rounds_of_eager_fp32_and_skipped_ones_say_why(tiny_config, tmp_path):
    tiny_config.update(precisions=["fp32", "int8"], variants=["eager", "traced"])
    tiny_config["benchmark"]["shapes"] = ["opt"]
    tiny_config["output"].update(dir=str(tmp_path / "out"), save_artifacts=False)
    outcome = run_dict(tiny_config)
    assert outcome.exit_code == 0
    rows = {(r.case.variant, r.case.precision): r for r in outcome.results}
    assert rows[("eager", "fp32")].timed and rows[("traced", "fp32")].timed
    for name in ("eager", "traced"):
        assert rows[(name, "int8")].status == "skipped" and "no INT8 path" in rows[(name, "int8")].reason
    assert outcome.results.speedup(rows[("traced", "fp32")]) is not None


@pytest.mark.parametrize("int8_ms, vnni, notes", [
    (5.2, False, {"INT8 is not faster here", "this CPU has no VNNI"}),
    (2.5, True, set()),
])
def test_the_int8_section_says_when_int8_is_not_faster_and_why(int8_ms, vnni, notes):
    from trtbench.core.env import cpu_int8_features
    from trtbench.report.reduced import NO_VNNI, NOT_FASTER, reduced_precision_markdown

    flags = "fpu avx2 avx512_vnni" if vnni else "fpu avx2"
    results = ResultSet(environments={"e": {"id": "e", "cpu_int8": cpu_int8_features(flags)}})
    int8 = dataclasses.replace(_record("ort", "int8", int8_ms), accuracy={
        "kind": "int8", "ok": True, "top1_agree": 0.995, "top5_overlap": 0.99, "sqnr_db": 31.0,
        "top1": 0.96, "top1_reference": 0.965})
    for record in (_record("eager", "fp32", 10.0), _record("ort", "fp32", 5.0), int8):
        results.add(record)
    text = reduced_precision_markdown(results)
    assert "| ort | opt | 1.9" in text or "| ort | opt | 4.0" in text  # the speedup over eager fp32
    assert "0.995" in text and "31.0" in text and "0.960 / 0.965" in text
    assert {note for note in (NOT_FASTER, NO_VNNI) if note in text} == notes


def test_cpu_int8_features_read_the_flags():
    from trtbench.core.env import cpu_int8_features

    assert cpu_int8_features("avx2 avx512f")["vnni"] is False
    assert cpu_int8_features("avx2 avx_vnni")["vnni"] is True
    features = cpu_int8_features("avx512_vnni amx_tile amx_int8")
    assert features["amx"] and features["flags"] == ["avx512_vnni", "amx_int8", "amx_tile"]


def test_the_speed_accuracy_plot_draws_each_int8_row_against_its_sqnr(tmp_path):
    from matplotlib.image import imread

    from trtbench.report.reduced import speed_accuracy_plot
    from helpers.plots import save_plots

    results = ResultSet(environments={"e": {"id": "e"}})
    int8 = dataclasses.replace(_record("ort", "int8", 4.0), accuracy={"kind": "int8", "ok": True, "sqnr_db": 31.0})
    for record in (_record("eager", "fp32", 10.0), _record("ort", "fp32", 5.0), int8):
        results.add(record)
    plot = speed_accuracy_plot(results, "tradeoff.png")
    assert plot is not None and imread(save_plots(tmp_path, [plot])[0]).shape[0] > 0
    no_int8 = ResultSet(environments={"e": {"id": "e"}})
    no_int8.add(_record("eager", "fp32", 10.0))
    assert speed_accuracy_plot(no_int8, "none.png") is None


def test_only_a_file_compiled_again_at_load_gets_the_int8_reload_allowance():
    """Bug: the 2% allowance for a reloaded int8 file, justified by PT2E recompiles alone, applied to every
    backend. An ONNX Runtime, OpenVINO, AOTInductor or TensorRT file carries the kernels its build ran and is
    held to fp32's tolerance (each reproduced its build exactly on the digits CNN: tests/quantize/test_int8_ort.py,
    test_int8_openvino.py and test_int8_pt2e.py save and reload them); compiled's program is compiled again."""
    from trtbench.artifacts.publish import reload_tolerance
    from trtbench.config.config import Tolerance
    from trtbench.variants import get_variant

    fp32 = Tolerance(atol=1e-5, rtol=5e-3)
    assert reload_tolerance(fp32, get_variant("compiled")).rtol == 0.02
    assert all(reload_tolerance(fp32, get_variant(name)) == fp32 for name in ("ort", "openvino", "aoti", "trt"))
