"""End-to-end runs on a tiny real model: results, tables, failures, interrupts."""

from __future__ import annotations

import csv
import json

import pytest
import torch

from trtbench.cli import main
from trtbench.config import config_from_dict
from trtbench.pipeline import Pipeline
from trtbench.results import SCHEMA_VERSION

RESULT_KEYS = {"variant", "precision", "shape", "status", "reason", "build_s", "latency_ms", "throughput",
               "iterations", "speedup", "parity", "samples_ms", "noisy", "warnings"}
LATENCY_KEYS = {"mean", "median", "std", "min", "max", "p90", "p95", "p99"}


@pytest.fixture
def finished_run(tiny_config, tmp_path):
    tiny_config["variants"] = ["eager", "traced", "scripted", "exported"]
    tiny_config["output"] = {"dir": str(tmp_path / "out")}
    outcome = Pipeline(config_from_dict(tiny_config)).run()
    return outcome, json.loads((tmp_path / "out" / "results.json").read_text())


def test_results_json_has_every_variant_at_every_shape(finished_run):
    outcome, doc = finished_run
    assert outcome.exit_code == 0
    assert doc["schema_version"] == SCHEMA_VERSION and doc["status"] == "complete"
    combos = {(r["variant"], r["shape"]) for r in doc["results"]}
    assert combos == {(v, s) for v in ("eager", "traced", "scripted", "exported") for s in ("min", "opt", "max")}
    for r in doc["results"]:
        assert RESULT_KEYS <= r.keys()
        assert r["status"] == "ok", r["reason"]
        assert LATENCY_KEYS <= r["latency_ms"].keys()
        assert len(r["samples_ms"]) == r["iterations"] == 5
        lat = r["latency_ms"]
        assert lat["min"] <= lat["median"] <= lat["p90"] <= lat["p99"] <= lat["max"]
        assert r["parity"]["ok"] and r["parity"]["top1_agree"] == 1.0
        assert r["throughput"] == pytest.approx(r["batch_size"] * 1000 / lat["mean"])


def test_speedup_is_relative_to_eager_at_same_shape(finished_run):
    _, doc = finished_run
    eager = {r["shape"]: r["latency_ms"]["median"] for r in doc["results"] if r["variant"] == "eager"}
    for r in doc["results"]:
        assert r["speedup"] == pytest.approx(eager[r["shape"]] / r["latency_ms"]["median"])


def test_environment_and_config_recorded(finished_run):
    _, doc = finished_run
    env = doc["environment"]
    for key in ("python", "torch", "torchvision", "cpu", "threads", "device", "cudnn_benchmark", "grad_enabled"):
        assert key in env
    assert doc["config"]["model"]["name"] == "toy_models:tiny_cnn"
    assert doc["config"]["inputs"][0]["opt_shape"] == [2, 3, 16, 16]


def test_torch_jit_future_warnings_are_captured_into_results(finished_run):
    _, doc = finished_run
    traced = next(r for r in doc["results"] if r["variant"] == "traced")
    assert any("FutureWarning" in w and "torch.jit.trace" in w for w in traced["warnings"])


def test_csv_and_markdown_tables(finished_run, tmp_path):
    outcome, doc = finished_run
    rows = list(csv.DictReader((tmp_path / "out" / "results.csv").open()))
    assert len(rows) == len(doc["results"])
    assert {"median_ms", "p99_ms", "speedup", "parity_ok"} <= rows[0].keys()
    report = (tmp_path / "out" / "report.md").read_text()
    assert "| variant | precision | shape |" in report
    assert report.count("| traced | fp32 |") == 3
    assert "## Artifacts" in report


def test_failing_variant_is_reported_and_others_go_on(tiny_config, write_config, capsys):
    tiny_config["model"]["name"] = "toy_models:unscriptable"
    path = write_config(tiny_config)
    code = main(["--config", str(path), "--quiet"])
    out = capsys.readouterr().out
    assert code == 1
    doc = json.loads((path.parent / "out" / "results.json").read_text())
    by_variant = {}
    for r in doc["results"]:
        by_variant.setdefault(r["variant"], set()).add(r["status"])
    assert by_variant == {"eager": {"ok"}, "traced": {"ok"}, "scripted": {"failed"}}
    scripted = next(r for r in doc["results"] if r["variant"] == "scripted")
    assert scripted["reason"].startswith("build failed:")
    assert "scripted fp32: failed: build failed" in out


def test_parity_failure_is_visible_and_fails_the_run(tiny_config, write_config, capsys):
    tiny_config["model"]["name"] = "toy_models:always_dropout"
    tiny_config["variants"] = ["eager", "scripted"]
    tiny_config["output"] = {"save_artifacts": False}  # a random model cannot pass the save-time reload check
    path = write_config(tiny_config)
    code = main(["--config", str(path), "--quiet"])
    out = capsys.readouterr().out
    assert code == 1
    doc = json.loads((path.parent / "out" / "results.json").read_text())
    assert all(r["status"] == "ok" and not r["parity"]["ok"] for r in doc["results"])
    assert out.count("CHECK FAILED") == len(doc["results"])
    assert "FAIL (abs" in (path.parent / "out" / "report.md").read_text()


def test_fp16_on_cpu_is_skipped_with_reason(tiny_config, tmp_path):
    tiny_config["precisions"] = ["fp32", "fp16"]
    tiny_config["output"] = {"dir": str(tmp_path / "out"), "save_artifacts": False}
    outcome = Pipeline(config_from_dict(tiny_config)).run()
    fp16 = [r for r in outcome.results if r.precision == "fp16"]
    assert fp16 and all(r.status == "skipped" and "CUDA" in r.reason for r in fp16)
    assert outcome.exit_code == 0


def test_interrupt_keeps_results_and_marks_the_rest(tiny_config, write_config, capsys):
    tiny_config["model"]["name"] = "toy_models:interrupt_after"
    tiny_config["model"]["kwargs"] = {"calls": 20}
    path = write_config(tiny_config)
    code = main(["--config", str(path), "--quiet"])
    assert code == 130
    doc = json.loads((path.parent / "out" / "results.json").read_text())
    statuses = [r["status"] for r in doc["results"]]
    assert doc["status"] == "interrupted"
    assert "ok" in statuses and "interrupted" in statuses
    assert len(doc["results"]) == 9  # every requested variant x shape is accounted for


def test_adaptive_mode_stops_on_its_own(tiny_config, tmp_path):
    tiny_config["benchmark"] = {"warmup": 1, "mode": "adaptive", "target_rel_ci": 0.5, "max_time_s": 2.0,
                                "min_iterations": 10, "shapes": ["opt"]}
    tiny_config["variants"] = ["eager"]
    tiny_config["output"] = {"dir": str(tmp_path / "out"), "save_artifacts": False}
    outcome = Pipeline(config_from_dict(tiny_config)).run()
    (result,) = outcome.results
    assert result.stopped_by in ("target_rel_ci", "max_time_s")
    assert result.iterations >= 10


def test_static_shape_benchmarks_once(tiny_config, tmp_path):
    tiny_config["inputs"] = [{"name": "input", "shape": [2, 3, 16, 16]}]
    tiny_config["variants"] = ["eager", "traced"]
    tiny_config["output"] = {"dir": str(tmp_path / "out"), "save_artifacts": False}
    outcome = Pipeline(config_from_dict(tiny_config)).run()
    assert [(r.variant, r.shape) for r in outcome.results] == [("eager", "opt"), ("traced", "opt")]


def test_channels_last_runs_and_matches_eager(tiny_config, tmp_path):
    tiny_config["channels_last"] = True
    tiny_config["model"]["name"] = "toy_models:channels_last_only"
    tiny_config["variants"] = ["eager", "traced", "scripted"]
    tiny_config["output"] = {"dir": str(tmp_path / "out"), "save_artifacts": False}
    outcome = Pipeline(config_from_dict(tiny_config)).run()
    assert outcome.exit_code == 0
    assert all(r.status == "ok" and r.parity["ok"] for r in outcome.results), [r.reason for r in outcome.results]


def test_a_shape_that_fails_in_eager_is_reported_and_other_shapes_run(tiny_config, tmp_path):
    tiny_config["model"]["name"] = "toy_models:fails_above_batch"
    tiny_config["variants"] = ["eager", "scripted"]
    tiny_config["output"] = {"dir": str(tmp_path / "out")}
    outcome = Pipeline(config_from_dict(tiny_config)).run()
    status = {(r.variant, r.shape): r.status for r in outcome.results}
    assert status == {("eager", "min"): "ok", ("eager", "opt"): "ok", ("eager", "max"): "failed",
                      ("scripted", "min"): "ok", ("scripted", "opt"): "ok", ("scripted", "max"): "failed"}
    failed = next(r for r in outcome.results if r.status == "failed")
    assert "batch too large" in failed.reason
    assert outcome.exit_code == 1


def test_busy_machine_is_called_out():
    from trtbench.env import busy_machine_note

    assert busy_machine_note({"cpu_busy_at_start": 0.05, "cpu_count": 2}) is None
    assert busy_machine_note({"cpu_busy_at_start": None, "cpu_count": 2}) is None
    note = busy_machine_note({"cpu_busy_at_start": 0.9, "cpu_count": 2})
    assert "90% of 2 CPUs" in note


def test_cpu_busy_fraction_sees_a_busy_core():
    import os
    import threading
    import time

    from trtbench.env import cpu_busy_fraction

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
    from trtbench.variants.torchscript import TorchScriptVariant

    impostor = torch.jit.script(__import__("toy_models").tiny_cnn())  # other random weights
    monkeypatch.setattr(TorchScriptVariant, "load", lambda self, artifact, device: impostor)
    tiny_config["variants"] = ["eager", "scripted"]
    tiny_config["output"] = {"dir": str(tmp_path / "out")}
    outcome = Pipeline(config_from_dict(tiny_config)).run()
    scripted = [r for r in outcome.results if r.variant == "scripted"]
    assert all(r.status == "failed" and "reloaded scripted_fp32.ts differs" in r.reason for r in scripted)
    assert not (tmp_path / "out" / "artifacts" / "scripted_fp32.ts").exists()


def test_variant_that_fails_its_check_is_not_saved(tiny_config, tmp_path):
    tiny_config["model"]["name"] = "toy_models:always_dropout"
    tiny_config["variants"] = ["eager", "scripted"]
    tiny_config["output"] = {"dir": str(tmp_path / "out")}
    outcome = Pipeline(config_from_dict(tiny_config)).run()
    scripted = [r for r in outcome.results if r.variant == "scripted"]
    assert all(r.parity_failed and "artifact not saved" in " ".join(r.warnings) for r in scripted)
    assert not (tmp_path / "out" / "artifacts" / "scripted_fp32.ts").exists()


def test_inputs_that_share_dims_export_with_shared_symbols(tiny_config, tmp_path):
    tiny_config["model"]["name"] = "toy_models:two_inputs"
    tiny_config["inputs"] = [
        {"name": "ids", "dtype": "int64", "value_range": [0, 50],
         "min_shape": [1, 4], "opt_shape": [2, 8], "max_shape": [4, 16]},
        {"name": "mask", "dtype": "float32", "value_range": [0, 1],
         "min_shape": [1, 4], "opt_shape": [2, 8], "max_shape": [4, 16]},
    ]
    tiny_config["variants"] = ["eager", "traced", "exported"]
    tiny_config["output"] = {"dir": str(tmp_path / "out")}
    outcome = Pipeline(config_from_dict(tiny_config)).run()
    assert all(r.status == "ok" and r.parity["ok"] for r in outcome.results), [r.reason for r in outcome.results]


def test_unscriptable_parent_fails_its_dependent_when_the_dependent_could_run(tiny_config, tmp_path, monkeypatch):
    from trtbench.variants.trt_common import TorchScriptFrontendVariant

    monkeypatch.setattr(TorchScriptFrontendVariant, "unavailable_reason", lambda self, device, precision: None)
    tiny_config["model"]["name"] = "toy_models:unscriptable"
    tiny_config["variants"] = ["eager", "trt_scripted"]
    tiny_config["output"] = {"dir": str(tmp_path / "out")}
    outcome = Pipeline(config_from_dict(tiny_config)).run()
    rows = [r for r in outcome.results if r.variant == "trt_scripted"]
    assert all(r.status == "failed" and r.reason.startswith("needs scripted, which did not build (failed:")
               for r in rows)
    assert outcome.exit_code == 1


def test_a_shape_without_eager_reference_fails_its_checks(tiny_config, tmp_path):
    tiny_config["model"]["name"] = "toy_models:eager_fails_above_batch"
    tiny_config["variants"] = ["eager", "scripted"]
    tiny_config["output"] = {"dir": str(tmp_path / "out"), "save_artifacts": False}
    outcome = Pipeline(config_from_dict(tiny_config)).run()
    status = {(r.variant, r.shape): r for r in outcome.results}
    assert status[("eager", "max")].status == "failed"
    scripted_max = status[("scripted", "max")]
    assert scripted_max.status == "ok" and scripted_max.parity_failed
    assert "no eager fp32 reference" in scripted_max.parity["reason"]
    assert status[("scripted", "opt")].parity["ok"]
    assert outcome.exit_code == 1


def test_stale_manifest_from_an_earlier_run_is_removed(tiny_config, tmp_path):
    tiny_config["output"] = {"dir": str(tmp_path / "out")}
    Pipeline(config_from_dict(tiny_config)).run()
    assert (tmp_path / "out" / "artifacts" / "manifest.json").is_file()
    tiny_config["variants"] = ["eager"]  # saves nothing
    Pipeline(config_from_dict(tiny_config)).run()
    assert not (tmp_path / "out" / "artifacts" / "manifest.json").exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the skip path on a machine without CUDA")
def test_trt_variants_are_skipped_with_reason_and_the_run_passes(tiny_config, write_config, capsys):
    tiny_config["variants"] = ["eager", "traced", "trt", "trt_traced", "trt_scripted"]
    path = write_config(tiny_config)
    code = main(["--config", str(path), "--quiet"])
    out = capsys.readouterr().out
    assert code == 0
    doc = json.loads((path.parent / "out" / "results.json").read_text())
    trt_rows = [r for r in doc["results"] if r["variant"].startswith("trt")]
    assert len(trt_rows) == 9
    assert all(r["status"] == "skipped" and r["reason"].startswith("CUDA is not available") for r in trt_rows)
    assert all(r["latency_ms"] is None and r["speedup"] is None for r in trt_rows)
    assert "trt fp32: skipped: CUDA is not available" in out
    assert "trt_traced fp32: skipped" in (path.parent / "out" / "report.md").read_text()
    assert "scripted" not in {r["variant"] for r in doc["results"]}, "no build for a skipped variant's parent"
