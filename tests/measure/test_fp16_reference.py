"""fp16 rows are compared with eager fp32: one build group holds every precision (eager fp32 first),
each precision builds from a model copy and inputs at its own dtype, fp16 rows are timed in the same
interleaved rounds as eager fp32 (their primary baseline) and eager fp16 (their second reference),
and the tables show both speedups.

fp16 runs on CUDA only; these runs allow it on the CPU (CPU half kernels run the tiny CNN's conv,
batch norm and linear) by patching the plan's precision check, to exercise the mixed-dtype group here."""

from __future__ import annotations

import csv
import io
import json

import pytest
import torch

from conftest import run_dict
from trtbench.core.case import Case
from trtbench.config.config import config_from_dict
from trtbench.config.plan import resolve
from trtbench.core.record import Record
from trtbench.results.resultset import ResultSet


@pytest.fixture
def fp16_on_cpu(monkeypatch):
    """Let fp16 run on the CPU (only the precision check: every variant builds and runs as on CUDA)."""
    import trtbench.config.plan

    monkeypatch.setattr(trtbench.config.plan, "unsupported_reason", lambda precision, device: None)


def test_fp16_joins_the_fp32_group_with_eager_fp32_first(tiny_config):
    tiny_config.update(precisions=["fp16", "fp32", "int8"], variants=["eager", "traced", "ort"])
    (group,) = resolve(config_from_dict(tiny_config)).groups
    assert group.precisions == ["fp32", "fp16", "int8"] and group.reference_precision == "fp32"
    assert group.slot_id("eager", "fp32") == "eager" and group.slot_id("traced", "fp16") == "traced@fp16"
    assert "CUDA" in group.unavailable["traced@fp16"]  # no GPU here: skipped with the reason, not dropped
    assert "ort@int8" not in group.unavailable


def test_fp16_alone_still_times_eager_fp32_as_its_reference(tiny_config):
    tiny_config.update(precisions=["fp16"], variants=["eager", "traced"])
    (group,) = resolve(config_from_dict(tiny_config)).groups
    assert group.precisions == ["fp32", "fp16"] and group.listed == ["fp16"]
    assert {(c.variant, c.precision) for c in group.cases() if c.point == "opt"} == {
        ("eager", "fp32"), ("eager", "fp16"), ("traced", "fp16")}


def test_shards_never_split_a_precision_from_its_eager_fp32(tiny_config):
    tiny_config.update(precisions=["fp32", "fp16"], sweep={"threads": [1, 2]})
    config = config_from_dict(tiny_config)
    assert resolve(config).matrix_groups == 2  # models x thread counts, every precision inside
    for index in range(2):
        cases = resolve(config, (index, 2)).cases
        assert {c.precision for c in cases} == {"fp32", "fp16"} and len({c.threads for c in cases}) == 1


def _record(variant: str, precision: str, median: float) -> Record:
    case = Case(model="m", variant=variant, precision=precision, point="opt", input_shapes=((2, 3, 8, 8),),
                threads=2, device="cuda:0")
    return Record(case=case, environment="e", status="ok",
                  rounds=[[median * f for f in (0.98, 1.0, 1.03)] for _ in range(4)])


def test_an_fp16_row_is_over_eager_fp32_and_over_eager_fp16():
    results = ResultSet()
    eager32, eager16, trt16, trt32 = (_record("eager", "fp32", 12.0), _record("eager", "fp16", 6.0),
                                      _record("trt", "fp16", 2.0), _record("trt", "fp32", 4.0))
    for record in (eager32, eager16, trt16, trt32):
        results.add(record)
    assert results.baseline(trt16) is eager32 and results.precision_baseline(trt16) is eager16
    assert results.speedup(trt16).value == pytest.approx(6.0)
    assert results.precision_speedup(trt16).value == pytest.approx(3.0)
    assert results.speedup(eager16).value == pytest.approx(2.0)  # eager fp16 itself, over eager fp32
    assert results.precision_speedup(eager16) is None and results.speedup(eager32) is None
    assert results.precision_baseline(trt32) is None  # fp32 has one reference
    int8 = _record("ort", "int8", 3.0)
    results.add(int8)
    assert results.baseline(int8) is eager32 and results.precision_speedup(int8) is None


@pytest.mark.parametrize("isolation", ["in_process", "process"])
def test_fp16_rows_are_timed_in_the_rounds_of_eager_fp32_each_precision_built_at_its_own_dtype(
        tiny_config, tmp_path, fp16_on_cpu, monkeypatch, isolation):
    """The rounds are paired across precisions; and (in_process, where traced builds here) the builds, and so the
    timed calls, see fp16 parameters and inputs at fp16, fp32 ones at fp32."""
    from trtbench.variants.traced import Traced

    seen = []
    build = Traced.build

    def spy(self, model, ctx):
        seen.append((ctx.precision, ctx.dtype, next(model.parameters()).dtype, ctx.example_inputs[0].dtype,
                     {t[0].dtype for t in ctx.shape_inputs.values()}))
        return build(self, model, ctx)

    monkeypatch.setattr(Traced, "build", spy)
    process = isolation == "process"
    tiny_config.update(precisions=["fp32", "fp16"], variants=["eager"] + (["exported"] if process else ["traced"]))
    tiny_config["benchmark"].update(shapes=["opt"], isolation=isolation, iterations=3)
    tiny_config["output"].update(dir=str(tmp_path / "out"), save_artifacts=False)
    outcome = run_dict(tiny_config)
    assert outcome.exit_code == 0, [(r.case, r.status, r.reason) for r in outcome.results]
    if not process:
        assert seen == [("fp32", torch.float32, torch.float32, torch.float32, {torch.float32}),
                        ("fp16", torch.float16, torch.float16, torch.float16, {torch.float16})]
    rows = {(r.case.variant, r.case.precision): r for r in outcome.results}
    other = "exported" if process else "traced"
    assert set(rows) == {(v, p) for v in ("eager", other) for p in ("fp32", "fp16")}
    eager32, eager16, fp16 = rows[("eager", "fp32")], rows[("eager", "fp16")], rows[(other, "fp16")]
    assert len({len(r.rounds) for r in rows.values()}) == 1 and len(fp16.rounds) >= 3  # the same rounds, paired
    for record in rows.values():
        assert record.accuracy["ok"]
        if record.case.precision == "fp16":  # checked against eager fp32 with fp16's tolerances
            assert (record.accuracy["atol"], record.accuracy["rtol"]) == (1e-3, 5e-2)
            assert record.accuracy["max_abs_err"] > 0
        method = record.metrics["isolation"]["method"]
        assert method == isolation
    if process:  # each slot in a worker of its own, the fp16 ones on the half payload
        pids = {r.metrics["isolation"]["pid"] for r in rows.values()}
        assert len(pids) == 4 and rows[("eager", "fp16")].metrics["isolation"]["hosts"] == "a rebuild"
        assert rows[("exported", "fp16")].metrics["isolation"]["hosts"] == "the saved .pt2 file"
    results = ResultSet.load(tmp_path / "out")
    loaded = {(r.case.variant, r.case.precision): r for r in results}
    assert results.baseline(loaded[(other, "fp16")]).case == eager32.case
    assert results.precision_baseline(loaded[(other, "fp16")]).case == eager16.case
    assert results.speedup(loaded[(other, "fp16")]) is not None
    assert results.precision_speedup(loaded[(other, "fp16")]) is not None
    table = list(csv.DictReader(io.StringIO((tmp_path / "out" / "results.csv").read_text())))
    by_key = {(r["variant"], r["precision"]): r for r in table}
    assert by_key[(other, "fp16")]["speedup"] and by_key[(other, "fp16")]["precision_speedup"]
    assert by_key[("eager", "fp16")]["speedup"] and not by_key[("eager", "fp16")]["precision_speedup"]
    assert not by_key[(other, "fp32")]["precision_speedup"]
    report = (tmp_path / "out" / "report.md").read_text()
    assert "vs eager same precision [95% CI, 1 process x rounds]" in report
    assert json.loads((tmp_path / "out" / "results.json").read_text())["records"]
