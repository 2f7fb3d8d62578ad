"""The measurement core's value types and resolve step: Case, ResultSet (schema v2, v1, merge),
plan.resolve (sweeps, several models, shards) and variant dependencies followed transitively."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import subprocess
import sys

import pytest

from helpers.records import record, two_variant_set
from trtbench.scenarios.serving.vision.report import serving_of
from trtbench.core.case import Case
from trtbench.cli import main
from trtbench.config.config import config_from_dict
from trtbench.core.errors import UserInputError
from trtbench.config.plan import ShapePoint, resolve, shape_points
from trtbench.core.record import Record
from trtbench.report.tables import csv_text
from trtbench.results.resultset import SCHEMA_VERSION, ResultSet
from trtbench.variants import build_order

CASE = Case(model="torchvision:resnet34", variant="traced", precision="fp16", point="opt",
            input_shapes=((2, 3, 224, 224), (2, 7)), threads=4, device="cuda:0", options='{"strict":false}')


# ---- Case ----------------------------------------------------------------------------------------

def test_case_is_frozen_and_hashable_by_value():
    twin = Case.from_dict(json.loads(json.dumps(CASE.to_dict())))
    assert twin == CASE and hash(twin) == hash(CASE) and twin is not CASE
    assert len({CASE, twin}) == 1 and {CASE: "x"}[twin] == "x"
    with pytest.raises(dataclasses.FrozenInstanceError):
        CASE.variant = "scripted"


def test_case_key_is_stable_across_processes_and_tells_every_field_apart(subprocess_env):
    code = ("import json, sys; from trtbench.core.case import Case; "
            "print(Case.from_dict(json.loads(sys.argv[1])).key)")
    keys = set()
    for seed in ("1", "2"):  # str hashes differ between these processes; the key must not
        proc = subprocess.run([sys.executable, "-c", code, json.dumps(CASE.to_dict())], capture_output=True,
                              text=True, env={**subprocess_env, "PYTHONHASHSEED": seed}, timeout=120)
        assert proc.returncode == 0, proc.stderr
        keys.add(proc.stdout.strip())
    assert keys == {CASE.key} and len(CASE.key) == 16
    changed = {"model": "torchvision:resnet18", "variant": "scripted", "precision": "fp32", "point": "max",
               "input_shapes": ((16, 3, 224, 224), (16, 7)), "threads": 1, "device": "cpu", "options": "",
               "knobs": "allocator=tcmalloc"}
    assert set(changed) == {f.name for f in dataclasses.fields(Case)}
    other_keys = {dataclasses.replace(CASE, **{name: value}).key for name, value in changed.items()}
    assert len(other_keys) == len(changed) and CASE.key not in other_keys


def test_case_round_trips_through_plain_data():
    data = CASE.to_dict()
    assert data["input_shapes"] == [[2, 3, 224, 224], [2, 7]]  # JSON-friendly lists
    again = Case.from_dict(json.loads(json.dumps(data)))
    assert again == CASE and again.key == CASE.key
    assert isinstance(again.input_shapes, tuple) and all(isinstance(s, tuple) for s in again.input_shapes)
    assert CASE.batch == 2 and CASE.shapes == "2x3x224x224,2x7" and CASE.label == 'traced{"strict":false}'


def test_the_baseline_id_is_the_case_without_its_variant_and_precision():
    eager = dataclasses.replace(CASE, variant="eager", options='{"cuda_graphs":true}')
    assert eager.baseline_id == CASE.baseline_id
    assert dataclasses.replace(eager, precision="fp32").baseline_id == CASE.baseline_id  # fp16's eager fp32
    for change in ({"point": "max"}, {"threads": 2}, {"device": "cpu"}, {"model": "n"},
                   {"input_shapes": ((4, 3, 224, 224), (4, 7))}):
        assert dataclasses.replace(CASE, **change).baseline_id != CASE.baseline_id, change


# ---- ResultSet -----------------------------------------------------------------------------------

CUDA_GRAPHS = '{"cuda_graphs":true}'


def with_options(r: Record, options: str) -> Record:
    return dataclasses.replace(r, case=dataclasses.replace(r.case, options=options))


def test_the_speedup_is_over_the_eager_the_run_listed_with_its_options():
    """Bug: the baseline was always plain eager, so with eager: {cuda_graphs: true} no row had a speedup."""
    results = ResultSet(environments={"env-a": {"id": "env-a"}})
    eager = with_options(record("eager", 10.0), CUDA_GRAPHS)
    traced = record("traced", 4.0)
    for r in (eager, traced, record("eager", 1.0, env="env-b")):  # another machine's eager is not it
        results.add(r)
    assert results.baseline(traced) is eager and results.baseline(eager) is eager
    assert results.speedup(traced).value == pytest.approx(2.5) and results.speedup(eager) is None
    csv_rows = {row["variant"]: row for row in csv.DictReader(io.StringIO(csv_text(results)))
                if row["environment"] == "env-a"}
    assert float(csv_rows["traced"]["speedup"]) == pytest.approx(2.5)
    assert csv_rows["eager"]["options"] == CUDA_GRAPHS and csv_rows["eager"]["speedup"] == ""


def test_merged_runs_with_two_eager_baselines_at_a_point_pair_with_neither():
    results = ResultSet(environments={"env-a": {"id": "env-a"}})
    plain, traced = record("eager", 10.0), record("traced", 4.0)
    graphs = with_options(record("eager", 8.0), CUDA_GRAPHS)
    for r in (plain, graphs, traced):
        results.add(r)
    assert results.baseline(traced) is None and results.speedup(traced) is None
    assert results.baseline(plain) is plain and results.baseline(graphs) is graphs


def test_v2_save_and_load_round_trip(tmp_path):
    results = two_variant_set()
    results.save(tmp_path / "results.json")
    doc = json.loads((tmp_path / "results.json").read_text())
    assert doc["schema_version"] == SCHEMA_VERSION == 6 and len(doc["records"]) == 3
    loaded = ResultSet.load(tmp_path)  # the directory or the file
    assert loaded.to_dict() == results.to_dict()
    assert [r.case for r in loaded] == [r.case for r in results]
    traced = next(r for r in loaded if r.case.variant == "traced")
    assert traced.rounds == next(r for r in results if r.case.variant == "traced").rounds
    assert loaded.speedup(traced) == results.speedup(next(r for r in results if r.case.variant == "traced"))
    assert loaded.speedup(traced).value == pytest.approx(2.5)
    assert loaded.exit_code() == 1  # the failed scripted


def test_a_v2_results_json_loads_as_v4_without_serving(tmp_path):
    results = two_variant_set()
    doc = results.to_dict()
    doc["schema_version"] = 2
    assert not any("serving" in record for record in doc["records"])  # what version 3 added, where served
    (tmp_path / "results.json").write_text(json.dumps(doc))
    loaded = ResultSet.load(tmp_path)
    assert loaded.to_dict() == results.to_dict() and all(serving_of(loaded, r) == () for r in loaded)


V1_DOC = {
    "schema_version": 1, "status": "complete", "started_at": "2026-01-01T00:00:00+00:00",
    "environment": {"python": "3.11.7", "torch": "2.14.1", "torchvision": "0.29.1", "cpu": "Some CPU",
                    "cpu_count": 2, "threads": 2, "device": "cpu"},
    "config": {"name": "old", "model": {"source": "torchvision", "name": "resnet18"}},
    "results": [
        {"variant": "eager", "precision": "fp32", "shape": "opt", "input_shapes": "2x3x32x32", "status": "ok",
         "reason": "", "samples_ms": [10.0, 10.2, 9.9, 10.1], "build_s": 0.0, "parity": {"ok": True},
         "latency_ms": {"median": 10.05}, "speedup": 1.0, "warnings": []},
        {"variant": "traced", "precision": "fp32", "shape": "opt", "input_shapes": "2x3x32x32", "status": "ok",
         "reason": "", "samples_ms": [5.0, 5.1, 4.9, 5.0], "build_s": 1.5, "parity": {"ok": True},
         "stopped_by": "iterations", "build_info": {"checked": True}},
        {"variant": "scripted", "precision": "fp32", "shape": "max", "input_shapes": "16x3x32x32",
         "status": "failed", "reason": "build failed: RuntimeError: x", "samples_ms": None},
    ],
}


def test_a_v1_results_json_loads_as_records(tmp_path):
    (tmp_path / "results.json").write_text(json.dumps(V1_DOC))
    results = ResultSet.load(tmp_path / "results.json")
    assert len(results) == 3 and len(results.environments) == 1
    (env_id,) = results.environments
    by_variant = {r.case.variant: r for r in results}
    eager, traced, scripted = by_variant["eager"], by_variant["traced"], by_variant["scripted"]
    assert eager.case == Case(model="torchvision:resnet18", variant="eager", precision="fp32", point="opt",
                              input_shapes=((2, 3, 32, 32),), threads=2, device="cpu")
    assert all(r.environment == env_id for r in results)
    assert eager.rounds == [[10.0, 10.2, 9.9, 10.1]] and eager.stats.median == pytest.approx(10.05)
    assert traced.build == {"build_s": 1.5, "info": {"checked": True}} and traced.stopped_by == "iterations"
    assert results.speedup(traced).value == pytest.approx(10.05 / 5.0)
    assert scripted.status == "failed" and scripted.reason == "build failed: RuntimeError: x" and not scripted.rounds
    assert scripted.case.input_shapes == ((16, 3, 32, 32),) and scripted.case.batch == 16
    assert results.runs[0]["name"] == "old" and results.runs[0]["schema_version"] == 1
    results.save(tmp_path / "v2.json")  # and it is written back as version 2
    assert ResultSet.load(tmp_path / "v2.json").to_dict() == results.to_dict()


def test_merge_keeps_both_environments_and_notes_a_case_measured_twice():
    a, b = two_variant_set("env-a"), two_variant_set("env-b", scale=2.0)
    merged, notes = ResultSet.merge([a, b])
    assert len(merged) == 6 and set(merged.environments) == {"env-a", "env-b"} and len(merged.runs) == 2
    assert notes == []
    traced_b = next(r for r in merged if r.case.variant == "traced" and r.environment == "env-b")
    assert merged.speedup(traced_b).value == pytest.approx(2.5)  # each speedup against its own environment's eager

    again = two_variant_set("env-a", scale=3.0)  # the same cases in the same environment, measured again
    merged, notes = ResultSet.merge([a, b, again])
    assert len(merged) == 6 and len(notes) == 3
    assert any("m traced fp32 opt" in n and "more than one input" in n and "input 3" in n for n in notes)
    eager_a = next(r for r in merged if r.case.variant == "eager" and r.environment == "env-a")
    assert eager_a.stats.median == pytest.approx(30.0)  # the later input's record is kept


@pytest.mark.parametrize("text, problem", [
    ("{not json", "not valid JSON"),
    (json.dumps({"schema_version": 7, "records": []}), "unknown schema_version 7"),
    (json.dumps({"records": []}), "unknown schema_version None"),
    (json.dumps([1, 2]), "unknown schema_version None"),
    (json.dumps({"schema_version": 2, "environments": {}}), "malformed results"),
    (json.dumps({"schema_version": 1, "environment": {}, "results": [{"variant": "eager"}]}), "malformed results"),
])
def test_unreadable_results_are_bad_input(tmp_path, text, problem):
    path = tmp_path / "results.json"
    path.write_text(text)
    with pytest.raises(UserInputError) as info:
        ResultSet.load(path)
    assert problem in info.value.problem and info.value.where == str(path) and info.value.hint


def test_compare_of_an_unreadable_results_json_exits_2(tmp_path, capsys):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "results.json").write_text(json.dumps({"schema_version": 99}))
    two_variant_set().save(tmp_path / "b" / "results.json")
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err
    assert "unknown schema_version 99" in err and "fix:" in err and "Traceback" not in err


# ---- the resolve step: sweeps, models, shards --------------------------------------------------------

def test_a_batch_sweep_gives_one_point_per_batch_with_the_batch_dims_replaced(tiny_config):
    tiny_config["sweep"] = {"batch": [1, 3]}
    tiny_config["inputs"].append({"name": "mask", "dtype": "float32", "min_shape": [1, 5], "opt_shape": [2, 5],
                                  "max_shape": [4, 5]})
    tiny_config["inputs"].append({"name": "table", "shape": [7, 5]})  # static: left as it is
    config = config_from_dict(tiny_config)
    assert shape_points(config) == [ShapePoint("b1", ((1, 3, 16, 16), (1, 5), (7, 5))),
                                    ShapePoint("b3", ((3, 3, 16, 16), (3, 5), (7, 5)))]
    plan = resolve(config)
    assert {(c.point, c.batch) for c in plan.cases} == {("b1", 1), ("b3", 3)}
    assert len(plan.cases) == 2 * 3


def test_a_batch_sweep_runs_and_reports_each_batch(tiny_config, tmp_path):
    from conftest import run_dict

    tiny_config["sweep"] = {"batch": [1, 3]}
    tiny_config["variants"] = ["eager", "traced"]
    tiny_config["output"].update(dir=str(tmp_path / "out"), save_artifacts=False)
    outcome = run_dict(tiny_config)
    assert outcome.exit_code == 0
    assert {(r.case.variant, r.case.point, r.case.input_shapes) for r in outcome.results} == {
        (v, f"b{b}", ((b, 3, 16, 16),)) for v in ("eager", "traced") for b in (1, 3)}
    assert all(r.status == "ok" and r.accuracy["ok"] for r in outcome.results)


@pytest.mark.parametrize("sweep, where", [({"batch": [2, 8]}, "sweep.batch[1]"), ({"batch": [0]}, "sweep.batch[0]"),
                                          ({"batch": [2, 2]}, "sweep.batch"), ({"threads": [1, 0]}, "sweep.threads[1]"),
                                          ({"precisions": ["fp8"]}, "sweep.precisions[0]")])
def test_bad_sweeps_exit_2_naming_the_key(tiny_config, write_config, capsys, sweep, where):
    tiny_config["sweep"] = sweep
    path = write_config(tiny_config)
    assert main(["--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"trtbench: error: {where}: " in err and "fix:" in err
    assert not (path.parent / "out").exists()


def test_batch_outside_the_range_names_the_input_and_its_range(tiny_config, write_config, capsys):
    tiny_config["sweep"] = {"batch": [1, 5]}
    assert main(["--config", str(write_config(tiny_config))]) == 2
    assert "sweep.batch[1]: 5 is outside input 'input''s batch range [1, 4]" in capsys.readouterr().err


def test_two_models_give_cases_for_both(tiny_config):
    tiny_config.pop("model")
    tiny_config["models"] = [{"source": "python", "name": "toy_models:tiny_cnn"},
                             {"source": "python", "name": "toy_models:tiny_cnn", "kwargs": {"num_classes": 5}}]
    plan = resolve(config_from_dict(tiny_config))
    ids = ["python:toy_models:tiny_cnn", "python:toy_models:tiny_cnn(num_classes=5)"]
    assert [g.model.id for g in plan.groups] == ids
    assert {(c.model, c.variant, c.point) for c in plan.cases} == {
        (m, v, p) for m in ids for v in ("eager", "traced", "scripted") for p in ("min", "opt", "max")}


def test_two_models_run_into_one_result_set(tiny_config, tmp_path):
    from conftest import run_dict

    tiny_config.pop("model")
    tiny_config["models"] = [{"source": "python", "name": "toy_models:tiny_cnn", "label": "a"},
                             {"source": "python", "name": "toy_models:tiny_cnn", "label": "b",
                              "kwargs": {"num_classes": 3}}]
    tiny_config["variants"] = ["eager", "traced"]
    tiny_config["benchmark"]["shapes"] = ["opt"]
    tiny_config["output"]["dir"] = str(tmp_path / "out")
    outcome = run_dict(tiny_config)
    assert outcome.exit_code == 0
    assert {(r.case.model, r.case.variant) for r in outcome.results} == {
        (m, v) for m in ("a", "b") for v in ("eager", "traced")}
    # artifacts of several models carry the model in their name, so neither overwrites the other
    assert {p.name for p in (tmp_path / "out" / "artifacts").glob("*.ts")} == {"a_traced_fp32.ts", "b_traced_fp32.ts"}


@pytest.mark.parametrize("models, where, text", [
    ([{"source": "python", "name": "toy_models:tiny_cnn"}] * 2, "models", "same id"),
    ([{"source": "python", "name": "toy_models:tiny_cnn", "label": "x"},
      {"source": "python", "name": "toy_models:two_inputs", "label": "x"}], "models", "same id"),
])
def test_duplicate_model_ids_exit_2(tiny_config, write_config, capsys, models, where, text):
    tiny_config.pop("model")
    tiny_config["models"] = models
    path = write_config(tiny_config)
    assert main(["--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"trtbench: error: {where}: " in err and text in err and "label" in err
    assert not (path.parent / "out").exists()


def test_model_and_models_together_is_bad_input(tiny_config):
    tiny_config["models"] = [{"source": "python", "name": "toy_models:tiny_cnn"}]
    with pytest.raises(UserInputError) as info:
        config_from_dict(tiny_config)
    assert info.value.where == "model" and "exactly one" in info.value.problem


@pytest.mark.parametrize("count", [2, 3, 4])
def test_shards_partition_the_cases(tiny_config, count):
    tiny_config["sweep"] = {"threads": [1, 2, 3]}
    tiny_config.pop("model")
    tiny_config["models"] = [{"source": "python", "name": "toy_models:tiny_cnn"},
                             {"source": "python", "name": "toy_models:two_inputs"}]
    config = config_from_dict(tiny_config)
    everything = resolve(config).cases
    assert len(everything) == 2 * 3 * 3 * 3 and len(set(everything)) == len(everything)
    shards = [resolve(config, (i, count)).cases for i in range(count)]
    assert sum(len(s) for s in shards) == len(everything)  # no case in two shards
    assert set().union(*map(set, shards)) == set(everything)
    for shard in shards:  # a build group (and its eager baseline) never straddles shards
        assert all(any(e.variant == "eager" and e.baseline_id == c.baseline_id for e in shard) for c in shard)
    assert shards == [resolve(config, (i, count)).cases for i in range(count)], "deterministic"


@pytest.mark.parametrize("text", ["3/3", "1", "a/b", "-1/2", "0/0", "1/", "/2", "0/2/4"])
def test_bad_shard_text_exits_2(tiny_config, write_config, capsys, text):
    path = write_config(tiny_config)
    assert main(["--config", str(path), f"--shard={text}"]) == 2
    err = capsys.readouterr().err
    assert "trtbench: error: --shard: expected I/N" in err and "fix:" in err
    assert not (path.parent / "out").exists()


def test_each_shard_states_its_share_and_shards_beyond_the_build_groups_warn(tiny_config):
    config = config_from_dict(tiny_config)  # one build group: 3 variants x 3 points
    assert resolve(config).shard_lines() == [], "an unsharded run has no share to state"
    first, *warning = resolve(config, (0, 3)).shard_lines()
    assert first == "shard 0/3: 1 of 1 build groups, 9 of 9 cases"
    assert len(warning) == 1 and "3 shards, but the matrix has only 1 build group(s)" in warning[0]
    assert "shard(s) 1/3, 2/3 have nothing to run; use at most 1 shard(s)" in warning[0]
    assert resolve(config, (2, 3)).shard_lines()[0] == "shard 2/3: 0 of 1 build groups, 0 of 9 cases"
    tiny_config["sweep"] = {"threads": [1, 2]}
    assert resolve(config_from_dict(tiny_config), (1, 2)).shard_lines() == [
        "shard 1/2: 1 of 2 build groups, 9 of 18 cases"], "as many shards as groups: no warning"


def test_an_empty_shard_says_so_on_stderr(tiny_config, write_config, capsys):
    tiny_config["output"]["save_artifacts"] = False
    path = write_config(tiny_config)
    assert main(["--config", str(path), "--shard=2/3", "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "shard 2/3: 0 of 1 build groups, 0 of 9 cases" in err
    assert "warning: 3 shards, but the matrix has only 1 build group(s)" in err


def test_a_shard_runs_only_its_cases(tiny_config, tmp_path, capsys):
    tiny_config["sweep"] = {"threads": [1, 2]}
    tiny_config["variants"] = ["eager"]
    tiny_config["benchmark"]["shapes"] = ["opt"]
    tiny_config["output"].update(dir=str(tmp_path / "s1"), save_artifacts=False)
    from conftest import run_dict

    outcome = run_dict(tiny_config, shard=(1, 2))
    assert [(r.case.variant, r.case.threads) for r in outcome.results] == [("eager", 2)]
    assert outcome.results.runs[0]["shard"] == [1, 2]


# ---- dependencies between variants, followed transitively -----------------------------------------

def test_build_order_follows_a_chain_of_three():
    assert build_order(["ort"]) == ["eager", "exported", "onnx", "ort"]
    order = build_order(["openvino", "ort", "exported"])
    assert order[0] == "eager" and len(order) == len(set(order))
    assert order.index("exported") < order.index("onnx") < order.index("openvino")
    assert order.index("onnx") < order.index("ort")


def test_a_dummy_chain_a_b_c_builds_in_order():
    from trtbench.variants import VARIANTS, Built, Variant

    def make(name, parent):
        return type(name, (Variant,), {"name": name, "depends_on": parent, "build": lambda self, m, ctx: Built(m)})

    chain = (("chain_c", "chain_b"), ("chain_a", None), ("chain_b", "chain_a"))
    try:
        for name, parent in chain:
            VARIANTS.register(make(name, parent))
        assert build_order(["chain_c"]) == ["eager", "chain_a", "chain_b", "chain_c"]
        assert build_order(["chain_b", "chain_c"]) == ["eager", "chain_a", "chain_b", "chain_c"]
    finally:
        for name, _ in chain:
            VARIANTS.unregister(name)


def test_plan_builds_the_chain_but_makes_cases_only_for_listed_variants(tiny_config):
    tiny_config["variants"] = ["eager", "ort"]
    (group,) = resolve(config_from_dict(tiny_config)).groups
    assert group.unavailable == {}
    assert group.build_names_at(group.reference_precision) == ["eager", "exported", "onnx", "ort"]
    assert {c.variant for c in group.cases()} == {"eager", "ort"}


def test_a_variant_that_cannot_run_here_takes_the_whole_chain_with_it(tiny_config, monkeypatch):
    from trtbench.variants.exported import Exported

    monkeypatch.setattr(Exported, "unavailable_reason", lambda self, target: "no export here")
    tiny_config["variants"] = ["eager", "traced", "ort", "openvino"]
    (group,) = resolve(config_from_dict(tiny_config)).groups
    assert group.unavailable == {"ort": "needs exported, which cannot run here: no export here",
                                 "openvino": "needs exported, which cannot run here: no export here"}
    assert group.build_names_at(group.reference_precision) == ["eager", "traced"]


def test_a_failed_build_fails_every_variant_down_the_chain(tiny_config, tmp_path, monkeypatch):
    from conftest import run_dict
    from trtbench.variants.exported import Exported

    def broken(self, model, ctx):
        raise RuntimeError("export broke")

    monkeypatch.setattr(Exported, "build", broken)
    tiny_config["variants"] = ["eager", "ort"]
    tiny_config["output"].update(dir=str(tmp_path / "out"), save_artifacts=False)
    outcome = run_dict(tiny_config)
    ort = [r for r in outcome.results if r.case.variant == "ort"]
    assert len(ort) == 3 and all(r.status == "failed" for r in ort)
    assert ort[0].reason.startswith("needs onnx, which did not build (failed: needs exported, which did not build "
                                    "(failed: build exported fp32: RuntimeError: export broke")
    assert outcome.exit_code == 1
    assert all(r.status == "ok" for r in outcome.results if r.case.variant == "eager")


def test_a_case_under_the_default_knobs_keeps_the_key_it_had_before_the_axis():
    """Results written before the deployment knobs existed resume and merge: the knobs are in the key only where
    one is set away from its default."""
    before = {key: value for key, value in CASE.to_dict().items() if key != "knobs"}
    assert CASE.to_dict() == before and Case.from_dict(before) == CASE
    assert CASE.key == "c46747bd1a7038fb"  # as computed before the knobs field existed
