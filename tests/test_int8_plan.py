"""int8 as a precision: which variants have an INT8 path, how int8 rows share their build group (and
so their interleaved rounds) with eager fp32, and that eager fp32 is their baseline."""

from __future__ import annotations

import pytest

from conftest import run_dict
from trtbench.case import Case
from trtbench.config import config_from_dict
from trtbench.errors import UserInputError
from trtbench.plan import resolve
from trtbench.record import Record
from trtbench.resultset import ResultSet


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
