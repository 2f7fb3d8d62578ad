"""End-to-end runs on a tiny real model: results, tables, failures, interrupts."""

from __future__ import annotations

import copy
import csv
import json

import numpy as np
import pytest
import torch

from conftest import by_point, run_dict
from trtbench.cli import main
from trtbench.core.env import default_threads
from trtbench.results.resultset import SCHEMA_VERSION, ResultSet

RECORD_KEYS = {"case", "case_key", "environment", "status", "reason", "rounds", "device_rounds", "stopped_by",
               "parity", "build", "metrics", "warnings"}
CASE_KEYS = {"model", "variant", "precision", "point", "input_shapes", "threads", "device", "options"}
VARIANTS4 = ("eager", "traced", "scripted", "exported")


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    from conftest import TINY_CONFIG

    out = tmp_path_factory.mktemp("finished") / "out"
    config = copy.deepcopy(TINY_CONFIG)
    config["variants"] = list(VARIANTS4)
    config["output"]["dir"] = str(out)
    outcome = run_dict(config)
    return outcome, json.loads((out / "results.json").read_text()), out


def test_results_json_has_every_variant_at_every_shape(finished_run):
    outcome, doc, _ = finished_run
    assert outcome.exit_code == 0
    assert doc["schema_version"] == SCHEMA_VERSION == 6
    (run,) = doc["runs"]
    assert run["status"] == "complete" and run["resumed_cases"] == 0
    # schema 6: the run's id, named by each record, its model's hash and its machine's fingerprint
    assert len(run["run_id"]) == 16 and {r["run_id"] for r in doc["records"]} == {run["run_id"]}
    assert [len(h) for h in run["models"].values()] == [16] and list(run["models"]) == ["python:toy_models:tiny_cnn"]
    machine = doc["environments"][run["environment"]]["machine"]
    assert set(machine) == {"cpu", "cpu_count", "gpu_name", "gpu_memory_gib", "cpu_flags", "id"}
    assert outcome.history == "", "a run into a folder the user named appends to no history unless told"
    combos = {(r["case"]["variant"], r["case"]["point"]) for r in doc["records"]}
    assert combos == {(v, s) for v in VARIANTS4 for s in ("min", "opt", "max")}
    for r in doc["records"]:
        assert RECORD_KEYS <= r.keys() and CASE_KEYS <= r["case"].keys()
        assert r["status"] == "ok", r["reason"]
        assert r["stopped_by"] == "iterations"
        assert sum(len(round_) for round_ in r["rounds"]) == 5  # fixed mode: exactly `iterations` raw samples
        assert r["parity"]["ok"] and r["parity"]["top1_agree"] == 1.0 and r["parity"]["kind"] == "elementwise"
    for record in outcome.results:  # stats are derived from the raw samples
        s = record.stats
        assert s.iterations == 5 and s.min <= s.median <= s.p90 <= s.p99 <= s.max
        assert s.median == pytest.approx(float(np.median(record.samples_ms)))
        assert record.throughput == pytest.approx(record.case.batch * 1000 / s.median)
        assert record.case.batch == {"min": 1, "opt": 2, "max": 4}[record.case.point]


def test_speedup_is_relative_to_eager_at_same_shape(finished_run):
    _, _, out = finished_run
    results = ResultSet.load(out)
    eager = {r.case.point: r for r in results if r.case.variant == "eager"}
    for r in results:
        speedup = results.speedup(r)
        if r.case.variant == "eager":
            assert speedup is None
            continue
        assert results.baseline(r) is eager[r.case.point]
        assert speedup.value == pytest.approx(_paired_by_round(eager[r.case.point], r))
        assert speedup.low <= speedup.value <= speedup.high
    rows = list(csv.DictReader((out / "results.csv").open()))
    traced_min = next(row for row in rows if row["variant"] == "traced" and row["point"] == "min")
    traced = next(r for r in results if r.case.variant == "traced" and r.case.point == "min")
    assert float(traced_min["speedup"]) == pytest.approx(_paired_by_round(eager["min"], traced), rel=1e-3)


def _paired_by_round(base, record) -> float:
    """The median over the rounds both records were timed in of the round's ratio of block medians (one block of
    each per round)."""
    blocks = {r: np.median(block) for block, r in zip(base.rounds, base.round_ids)}
    return float(np.exp(np.median([np.log(blocks[r] / np.median(block))
                                   for block, r in zip(record.rounds, record.round_ids) if r in blocks])))


def test_environment_and_config_recorded(finished_run):
    _, doc, _ = finished_run
    (env_id,) = doc["environments"]
    env = doc["environments"][env_id]
    assert env["id"] == env_id and all(r["environment"] == env_id for r in doc["records"])
    for key in ("python", "torch", "torchvision", "cpu", "device", "cudnn_benchmark", "grad_enabled"):
        assert key in env
    # Bug: the setting was read from torch before the run set it (torch's default, False).
    assert doc["runs"][0]["config"]["benchmark"]["cudnn_benchmark"] is True  # the config's default
    assert env["cudnn_benchmark"] is True and torch.backends.cudnn.benchmark is False  # the run's, not torch's
    config = doc["runs"][0]["config"]
    assert config["models"][0]["name"] == "toy_models:tiny_cnn"
    assert config["inputs"][0]["opt_shape"] == [2, 3, 16, 16]
    assert {r["case"]["threads"] for r in doc["records"]} == {env["default_threads"]["threads"]}
    assert env["default_threads"] == default_threads(), "the default thread count and where it came from"


def test_torch_jit_future_warnings_are_captured_into_results_as_the_deprecation_note(finished_run):
    _, doc, _ = finished_run
    traced = next(r for r in doc["records"] if r["case"]["variant"] == "traced")
    assert "TorchScript: deprecated in torch 2.14; successor: exported / aoti" in traced["warnings"]
    assert not [w for w in traced["warnings"] if "torch.jit" in w], traced["warnings"]


def test_csv_and_markdown_tables(finished_run):
    _, doc, out = finished_run
    rows = list(csv.DictReader((out / "results.csv").open()))
    assert len(rows) == len(doc["records"]) == 12
    assert {"median_ms", "p99_ms", "speedup", "speedup_low", "speedup_high", "parity_ok", "rounds"} <= rows[0].keys()
    report = (out / "report.md").read_text()
    assert "| variant | point | status |" in report
    speedup = report.split("## Speedup", 1)[1].split("\n## ", 1)[0]
    assert sum(line.startswith("| traced") for line in speedup.splitlines()) == 3
    assert "## Artifacts" in report
    page = (out / "report.html").read_text()
    table = json.loads(page.split('id="table-data">', 1)[1].split("</script>", 1)[0])
    assert [row["values"]["speedup"] for row in table["rows"]] == [float(r["speedup"]) if r["speedup"] else None
                                                                   for r in rows], "report.html's rows: the CSV's"


def test_failing_variant_is_reported_others_go_on_and_failures_log_holds_the_traceback(tiny_config, write_config,
                                                                                       capsys):
    tiny_config["model"]["name"] = "toy_models:unscriptable"
    tiny_config["benchmark"]["shapes"] = ["opt"]  # one point shows it
    tiny_config["output"]["save_artifacts"] = False  # about the build, not the files
    path = write_config(tiny_config)
    code = main(["--config", str(path), "--quiet"])
    out = capsys.readouterr().out
    assert code == 1
    results = ResultSet.load(path.parent / "out")
    by_variant = {}
    for r in results:
        by_variant.setdefault(r.case.variant, set()).add(r.status)
    assert by_variant == {"eager": {"ok"}, "traced": {"ok"}, "scripted": {"failed"}}
    scripted = [r for r in results if r.case.variant == "scripted"]
    assert scripted[0].reason.startswith("build scripted fp32: ")
    assert "scripted fp32: failed: build scripted fp32" in out
    # the reason names failures.log's entry, which holds the traceback
    assert all("(traceback: failures.log #" in r.reason for r in scripted)
    entry = scripted[0].reason.rsplit("failures.log ", 1)[1].rstrip(")")
    log = (path.parent / "out" / "failures.log").read_text()
    assert f"=== {entry} build scripted fp32\n" in log
    section = log.split(f"=== {entry} ", 1)[1]
    assert "Traceback (most recent call last):" in section
    # the whole stack, from trtbench's build step down into torch.jit, ending in the error the reason names
    assert "trtbench/variants/scripted.py" in section and "torch/jit/_script.py" in section
    error = scripted[0].reason.split("build scripted fp32: ", 1)[1].split(" (traceback:")[0]
    assert error.startswith("RuntimeError") and error.split(": ", 1)[1] in section


def test_an_accuracy_failure_is_visible_fails_the_run_and_is_not_saved(tiny_config, write_config, capsys):
    tiny_config["model"]["name"] = "toy_models:scripted_off_by_one"
    tiny_config["variants"] = ["eager", "traced", "scripted"]
    path = write_config(tiny_config)
    code = main(["--config", str(path), "--quiet"])
    out = capsys.readouterr().out
    assert code == 1
    results = ResultSet.load(path.parent / "out")
    assert all(r.status == "ok" for r in results)
    assert {r.case.variant for r in results if r.accuracy_failed} == {"scripted"}
    assert out.count("CHECK FAILED") == 3
    assert "FAIL (abs" in (path.parent / "out" / "report.md").read_text()
    scripted = [r for r in results if r.case.variant == "scripted"]
    assert len(scripted) == 3
    assert all(r.accuracy_failed and "artifact not saved" in " ".join(r.warnings) for r in scripted)
    artifacts = path.parent / "out" / "artifacts"
    assert not (artifacts / "scripted_fp32.ts").exists()
    assert (artifacts / "traced_fp32.ts").exists()  # the accurate variant still ships
    # the failing variant is diagnosed after the run, at its first failing point; the toy's fault branches on
    # torch.jit.is_scripting(), which the traced graph of the diagnosis does not take: nothing diverges there
    first = scripted[0].case.point
    entry = json.loads((path.parent / "out" / "diagnose" / f"scripted-fp32-{first}.json").read_text())
    assert entry["status"] == "agrees" and entry["builds"] == entry["builds_announced"] == 2
    assert "## Where reduced precision diverges" in (path.parent / "out" / "report.md").read_text()
    assert [p.name for p in (path.parent / "out" / "diagnose").glob("*.json")] == [f"scripted-fp32-{first}.json"]


def test_fp16_on_cpu_is_skipped_with_reason(tiny_config, tmp_path):
    tiny_config["precisions"] = ["fp32", "fp16"]
    tiny_config["output"].update(dir=str(tmp_path / "out"), save_artifacts=False)
    outcome = run_dict(tiny_config)
    fp16 = [r for r in outcome.results if r.case.precision == "fp16"]
    assert len(fp16) == 9 and all(r.status == "skipped" and "CUDA" in r.reason and not r.rounds for r in fp16)
    assert all(r.status == "ok" for r in outcome.results if r.case.precision == "fp32")
    assert outcome.exit_code == 0


def test_interrupt_keeps_results_and_marks_the_rest(tiny_config, write_config, capsys):
    tiny_config["model"]["name"] = "toy_models:interrupt_after"
    tiny_config["model"]["kwargs"] = {"calls": 30}  # enough for the first point's calls (switch-ins too), not all
    tiny_config["output"]["save_artifacts"] = False  # about the records, not the files
    path = write_config(tiny_config)
    code = main(["--config", str(path), "--quiet"])
    assert code == 130
    assert "interrupted: partial results were written" in capsys.readouterr().err
    doc = json.loads((path.parent / "out" / "results.json").read_text())
    statuses = [r["status"] for r in doc["records"]]
    assert doc["runs"][0]["status"] == "interrupted"
    assert "ok" in statuses and "interrupted" in statuses
    assert len(doc["records"]) == 9  # every requested variant x shape is accounted for
    assert "**Interrupted**" in (path.parent / "out" / "report.md").read_text()


def test_adaptive_mode_stops_on_its_own(tiny_config, tmp_path):
    tiny_config["benchmark"] = {"warmup": 1, "warmup_s": 0, "mode": "adaptive", "race": False, "target_rel_ci": 0.5,
                                "max_time_s": 2.0, "min_iterations": 10, "block_s": 0.005, "shapes": ["opt"],
                                "measure_ceiling": False}
    tiny_config["variants"] = ["eager"]
    tiny_config["output"].update(dir=str(tmp_path / "out"), save_artifacts=False)
    outcome = run_dict(tiny_config)
    (result,) = outcome.results
    assert result.stopped_by in ("target_rel_ci", "max_time_s")
    assert len(result.samples_ms) >= 10 and len(result.rounds) >= 5


def test_static_shape_benchmarks_once(tiny_config, tmp_path):
    tiny_config["inputs"] = [{"name": "input", "shape": [2, 3, 16, 16]}]
    tiny_config["variants"] = ["eager", "traced"]
    tiny_config["output"].update(dir=str(tmp_path / "out"), save_artifacts=False)
    outcome = run_dict(tiny_config)
    assert [(r.case.variant, r.case.point) for r in outcome.results] == [("eager", "opt"), ("traced", "opt")]


def test_channels_last_runs_and_matches_eager(tiny_config, tmp_path):
    tiny_config["channels_last"] = True
    tiny_config["model"]["name"] = "toy_models:channels_last_only"
    tiny_config["variants"] = ["eager", "traced", "scripted"]
    tiny_config["output"].update(dir=str(tmp_path / "out"), save_artifacts=False)
    outcome = run_dict(tiny_config)
    assert outcome.exit_code == 0
    assert all(r.status == "ok" and r.accuracy["ok"] for r in outcome.results), [r.reason for r in outcome.results]


def test_a_shape_that_fails_in_eager_is_reported_and_other_shapes_run(tiny_config, tmp_path):
    tiny_config["model"]["name"] = "toy_models:fails_above_batch"
    tiny_config["variants"] = ["eager", "scripted"]
    tiny_config["output"].update(dir=str(tmp_path / "out"), save_artifacts=False)
    outcome = run_dict(tiny_config)
    status = {key: r.status for key, r in by_point(outcome.results).items()}
    assert status == {("eager", "min"): "ok", ("eager", "opt"): "ok", ("eager", "max"): "failed",
                      ("scripted", "min"): "ok", ("scripted", "opt"): "ok", ("scripted", "max"): "failed"}
    failed = next(r for r in outcome.results if r.status == "failed")
    assert "batch too large" in failed.reason
    assert outcome.exit_code == 1


def test_busy_machine_is_called_out():
    from trtbench.core.env import busy_machine_note

    assert busy_machine_note({"cpu_busy_at_start": 0.05, "cpu_count": 2}) is None
    assert busy_machine_note({"cpu_busy_at_start": None, "cpu_count": 2}) is None
    note = busy_machine_note({"cpu_busy_at_start": 0.9, "cpu_count": 2})
    assert "90% of 2 CPUs" in note


def test_cpu_busy_fraction_sees_a_busy_core():
    import os
    import threading
    import time

    from trtbench.core.env import cpu_busy_fraction

    stop = time.perf_counter() + 1.0

    def spin():
        while time.perf_counter() < stop:
            pass

    thread = threading.Thread(target=spin)
    thread.start()
    busy = cpu_busy_fraction(window_s=0.5)
    thread.join()
    assert busy is not None and busy >= 0.6 / os.cpu_count()  # one spinning core of cpu_count


def test_artifact_that_does_not_reproduce_the_variant_is_not_published(tiny_config, tmp_path, monkeypatch):
    from trtbench.variants.torchscript_common import TorchScriptVariant

    impostor = torch.jit.script(__import__("toy_models").tiny_cnn())  # other random weights
    monkeypatch.setattr(TorchScriptVariant, "load", lambda self, artifact, device: impostor)
    tiny_config["variants"] = ["eager", "scripted"]
    tiny_config["output"]["dir"] = str(tmp_path / "out")
    outcome = run_dict(tiny_config)
    scripted = [r for r in outcome.results if r.case.variant == "scripted"]
    assert all(r.status == "failed" and "reloaded scripted_fp32.ts differs" in r.reason for r in scripted)
    assert all(r.rounds for r in scripted), "the timings are kept"
    assert not (tmp_path / "out" / "artifacts" / "scripted_fp32.ts").exists()
    assert outcome.exit_code == 1


def test_inputs_that_share_dims_export_with_shared_symbols(tiny_config, tmp_path):
    tiny_config["model"]["name"] = "toy_models:two_inputs"
    tiny_config["inputs"] = [
        {"name": "ids", "dtype": "int64", "value_range": [0, 50],
         "min_shape": [1, 4], "opt_shape": [2, 8], "max_shape": [4, 16]},
        {"name": "mask", "dtype": "float32", "value_range": [0, 1],
         "min_shape": [1, 4], "opt_shape": [2, 8], "max_shape": [4, 16]},
    ]
    tiny_config["variants"] = ["eager", "traced", "exported"]
    tiny_config["output"].update(dir=str(tmp_path / "out"), save_artifacts=False)  # the builds and their checks
    outcome = run_dict(tiny_config)
    assert all(r.status == "ok" and r.accuracy["ok"] for r in outcome.results), [r.reason for r in outcome.results]


def test_unscriptable_parent_fails_its_dependent_when_the_dependent_could_run(tiny_config, tmp_path, monkeypatch):
    from trtbench.variants.trt_common import TorchScriptFrontendVariant

    monkeypatch.setattr(TorchScriptFrontendVariant, "unavailable_reason", lambda self, target: None)
    tiny_config["model"]["name"] = "toy_models:unscriptable"
    tiny_config["variants"] = ["eager", "trt_scripted"]
    tiny_config["output"].update(dir=str(tmp_path / "out"), save_artifacts=False)
    outcome = run_dict(tiny_config)
    rows = [r for r in outcome.results if r.case.variant == "trt_scripted"]
    assert len(rows) == 3
    assert all(r.status == "failed" and r.reason.startswith("needs scripted, which did not build (failed:")
               for r in rows)
    assert outcome.exit_code == 1


def test_a_shape_without_eager_reference_fails_its_checks(tiny_config, tmp_path):
    tiny_config["model"]["name"] = "toy_models:eager_fails_above_batch"
    tiny_config["variants"] = ["eager", "scripted"]
    tiny_config["output"].update(dir=str(tmp_path / "out"), save_artifacts=False)
    outcome = run_dict(tiny_config)
    status = by_point(outcome.results)
    assert status[("eager", "max")].status == "failed"
    scripted_max = status[("scripted", "max")]
    assert scripted_max.status == "ok" and scripted_max.accuracy_failed
    assert "no eager fp32 reference" in scripted_max.accuracy["reason"]
    assert status[("scripted", "opt")].accuracy["ok"]
    assert outcome.exit_code == 1


def test_stale_manifest_from_an_earlier_run_is_removed(tiny_config, tmp_path):
    tiny_config["output"]["dir"] = str(tmp_path / "out")
    tiny_config["benchmark"]["shapes"] = ["opt"]  # what is saved does not depend on the points
    run_dict(tiny_config)
    assert (tmp_path / "out" / "artifacts" / "manifest.json").is_file()
    tiny_config["variants"] = ["eager"]  # saves nothing
    run_dict(tiny_config, fresh=True)
    assert not (tmp_path / "out" / "artifacts" / "manifest.json").exists()


def test_a_resumed_run_with_fewer_variants_does_not_publish_the_dropped_ones(tiny_config, tmp_path):
    tiny_config["output"]["dir"] = str(tmp_path / "out")
    tiny_config["benchmark"]["shapes"] = ["opt"]
    run_dict(tiny_config)
    tiny_config["variants"] = ["eager"]  # same directory, no --fresh: the journal is read back
    outcome = run_dict(tiny_config)
    assert {r.case.variant for r in outcome.results} == {"eager"}
    assert not (tmp_path / "out" / "artifacts" / "manifest.json").exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the skip path on a machine without CUDA")
def test_trt_variants_are_skipped_with_reason_and_the_run_passes(tiny_config, write_config, capsys):
    tiny_config["variants"] = ["eager", "traced", "trt", "trt_traced", "trt_scripted"]
    tiny_config["output"]["save_artifacts"] = False  # about what is built and run, not the files
    path = write_config(tiny_config)
    code = main(["--config", str(path)])
    out = capsys.readouterr().out
    assert code == 0
    results = ResultSet.load(path.parent / "out")
    trt_rows = [r for r in results if r.case.variant.startswith("trt")]
    assert len(trt_rows) == 9
    assert all(r.status == "skipped" and r.reason.startswith("CUDA is not available") for r in trt_rows)
    assert all(r.stats is None and results.speedup(r) is None for r in trt_rows)
    assert "trt fp32: skipped: CUDA is not available" in out
    assert "trt_traced fp32: skipped" in (path.parent / "out" / "report.md").read_text()
    assert "scripted" not in {r.case.variant for r in results}
    assert "build python:toy_models:tiny_cnn scripted fp32" not in out, "no build for a skipped variant's parent"
    assert "build python:toy_models:tiny_cnn traced fp32" in out
