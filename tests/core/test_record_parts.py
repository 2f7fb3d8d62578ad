"""The results are frozen parts joined by key: a record per case, the device's ceilings once per
(environment, device, dtype, threads), a case's serving results by case key; schema 4, and versions
2 and 3 (their ceilings and serving results inside each record) lifted into place on reading."""

from __future__ import annotations

import ast
import dataclasses
import json
from pathlib import Path

import pytest

import trtbench
from helpers.records import record
from trtbench.scenarios.serving.vision.report import serving_of
from trtbench.core.case import Case
from trtbench.measure.ceiling import Ceiling
from trtbench.results.journal import Journal
from trtbench.core.record import Record
from trtbench.results.resultset import SCHEMA_VERSION, ResultSet
from trtbench.scenarios.serving.loadgen.summary import LoadGenSummary
from trtbench.scenarios.serving.vision.result import LoadGenRun, ServedCase, ServingResult

PARTS = (Case, Record, Ceiling, ServedCase, ServingResult, LoadGenRun, LoadGenSummary)
CEILING = {"peak_flops_per_s": 2e11, "peak_method": "cpuinfo", "peak_assumptions": "x",
           "measured_flops_per_s": 1e11, "measured_method": "matmul"}


@pytest.mark.parametrize("part", PARTS, ids=lambda p: p.__name__)
def test_every_part_of_the_results_is_a_frozen_dataclass(part):
    assert dataclasses.is_dataclass(part) and part.__dataclass_params__.frozen
    instance = {Record: lambda: record("eager", 1.0), Ceiling: lambda: Ceiling("e", "cpu", "float32", 2, {})}.get(part)
    if instance is not None:
        with pytest.raises(dataclasses.FrozenInstanceError):
            instance().environment = "other"


def test_the_core_record_imports_no_scenario():
    tree = ast.parse((Path(trtbench.__file__).parent / "core" / "record.py").read_text())
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    assert not any(name.startswith("trtbench.scenarios") for name in imported), imported
    assert "serving" not in {f.name for f in dataclasses.fields(Record)}


def served_case(r: Record, peak: float = 125.0) -> ServedCase:
    result = ServingResult(loadgen_scenario="server", workers=1, threads=2, bound_ms=40.0, percentile=0.99,
                           peaks=(peak,))
    return ServedCase(r.case.key, r.environment, (result,))


def flops_record(variant: str, median: float, env: str = "env-a") -> Record:
    return record(variant, median, env, metrics={"flops": 1e9})


def test_ceilings_are_stored_once_and_joined_to_every_record_they_apply_to(tmp_path):
    results = ResultSet(environments={"env-a": {"id": "env-a"}})
    eager, traced = flops_record("eager", 10.0), flops_record("traced", 5.0)
    for r in (eager, traced):
        results.add(r)
    results.add(Ceiling("env-a", "cpu", "float32", 2, CEILING))
    results.add(served_case(traced))
    results.save(tmp_path / "results.json")
    doc = json.loads((tmp_path / "results.json").read_text())
    assert doc["schema_version"] == SCHEMA_VERSION == 6
    assert len(doc["ceilings"]) == 1 and not any("ceiling" in r["metrics"] for r in doc["records"])
    assert [s["case_key"] for s in doc["serving"]] == [traced.case.key]
    loaded = ResultSet.load(tmp_path)
    by_variant = {r.case.variant: r for r in loaded}
    assert (loaded.ceiling_of(by_variant["eager"]) == loaded.ceiling_of(by_variant["traced"])
            == results.parts(Ceiling.KIND)[0])
    # 1e9 FLOPs in a 5 ms median: 2e11 FLOP/s, all of the peak, twice the measured matmul
    assert loaded.ceiling_of(by_variant["traced"]).share(by_variant["traced"].achieved_flops_per_s, "peak") == \
        pytest.approx(1.0)
    assert serving_of(loaded, by_variant["traced"])[0].peak_qps == 125.0
    assert serving_of(loaded, by_variant["eager"]) == ()
    # another dtype or thread count has no ceiling measured
    fp16 = dataclasses.replace(traced, case=dataclasses.replace(traced.case, precision="fp16"))
    assert loaded.ceiling_of(fp16) is None


@pytest.mark.parametrize("version", [2, 3])
def test_an_old_file_has_its_per_record_ceilings_and_serving_lifted_into_place(tmp_path, version):
    eager, traced = flops_record("eager", 10.0), flops_record("traced", 5.0)
    served = served_case(traced)
    records = [{**r.to_dict(), "metrics": {**r.metrics, "ceiling": CEILING}} for r in (eager, traced)]
    if version == 3:
        records[1]["serving"] = [s.to_dict() for s in served.results]
    (tmp_path / "results.json").write_text(json.dumps({"schema_version": version, "environments": {"env-a": {}},
                                                       "runs": [], "records": records}))
    loaded = ResultSet.load(tmp_path)
    assert [r.metrics for r in loaded] == [{"flops": 1e9}, {"flops": 1e9}]
    assert loaded.parts(Ceiling.KIND) == [Ceiling("env-a", "cpu", "float32", 2, CEILING)]
    assert serving_of(loaded, loaded.get(traced.case, "env-a")) == (served.results if version == 3 else ())
    again = ResultSet.from_dict(json.loads(json.dumps(loaded.to_dict())))
    assert again.to_dict() == loaded.to_dict()


def test_a_merge_keeps_every_ceiling_and_the_serving_of_the_record_it_keeps():
    first, second = ResultSet(), ResultSet()
    traced = flops_record("traced", 5.0)
    first.add(traced)
    first.add(served_case(traced, peak=100.0))
    first.add(Ceiling("env-a", "cpu", "float32", 2, CEILING))
    other_env = flops_record("traced", 5.0, env="env-b")
    second.add(other_env)
    second.add(Ceiling("env-b", "cpu", "float32", 2, {**CEILING, "peak_flops_per_s": 1e11}))
    second.add(traced)  # measured again, not served this time
    merged, notes = ResultSet.merge([first, second])
    assert len(notes) == 1 and len(merged.parts(Ceiling.KIND)) == 2
    assert merged.ceiling_of(other_env).values["peak_flops_per_s"] == 1e11
    assert serving_of(merged, traced) == ()  # the later record's, not the replaced one's
    merged, _ = ResultSet.merge([second, first])
    assert serving_of(merged, traced)[0].peak_qps == 100.0


def test_the_journal_carries_the_parts(tmp_path):
    journal = Journal(tmp_path)
    traced = flops_record("traced", 5.0)
    ceiling = Ceiling("env-a", "cpu", "float32", 2, CEILING)
    journal.part(traced)
    journal.part(ceiling)
    journal.part(served_case(traced))
    state = journal.read()
    assert state.records == {traced.case.key: traced} and state.parts.of("ceiling") == [ceiling]
    assert state.parts.get("served", traced.key) == served_case(traced) and len(state.parts.of("served")) == 1


def test_report_entries_are_not_read_back_as_parts_and_unknown_parts_are_kept():
    """results.json's report entries (recommendations) are recomputed, never read back as parts; the list of
    a part kind this process has not registered is kept as it was, and written again."""
    results = ResultSet(environments={"env-a": {"id": "env-a"}})
    doc = {**results.to_dict(), "serving_recommendations": [{"stale": True}], "tallies": [{"slot": "eager"}]}
    doc["part_lists"] = [*doc["part_lists"], "tallies"]
    loaded = ResultSet.from_dict(doc)
    again = loaded.to_dict()
    assert "serving_recommendations" not in again and again["tallies"] == [{"slot": "eager"}]
    assert "tallies" in again["part_lists"] and "serving" in again["part_lists"]
