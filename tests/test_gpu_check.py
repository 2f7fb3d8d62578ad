"""scripts/gpu_check.py: the GPU check's configs (valid trtbench configs on either device) and its report, from each
part's exit code and results (a part that ran out of its share says so, the others are reported)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from trtbench.config.config import config_from_dict
from trtbench.config.plan import resolve

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "gpu_check.py"
spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
gpu_check = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gpu_check)


@pytest.mark.parametrize("device", ["cuda", "cpu"])
def test_every_part_config_is_a_valid_config(device):
    configs = gpu_check.part_configs(device)
    assert set(configs) == {"resnet34", "resnet50", "tinyllama"} | ({"cuda_graphs"} if device == "cuda" else set())
    for config in configs.values():
        parsed = config_from_dict(config)
        assert parsed.benchmark.max_build_s == 90
        if device == "cpu":
            resolve(parsed)  # resolves on this machine, as the rehearsal does
    assert configs["resnet34"]["variants"] == ["eager", "traced", "scripted", "exported", "compiled"]


def record(variant: str, precision: str, median: float, **metrics) -> dict:
    return {"case": {"variant": variant, "precision": precision, "point": "opt", "options": ""}, "status": "ok",
            "reason": "", "rounds": [[median] * 3], "metrics": metrics}


def test_the_report_names_a_part_that_ran_out_and_judges_the_others(tmp_path):
    (tmp_path / "parts.tsv").write_text("resnet34\t124\t110\t110\nresnet50\t0\t20\t25\nfidelity\t0\t30\t50\n")
    (tmp_path / "resnet50").mkdir()
    unavailable = {"unavailable": "pynvml is not installed"}
    (tmp_path / "resnet50" / "results.json").write_text(json.dumps({"records": [
        record("eager", "fp32", 30.0, energy=unavailable, launch={"share": 0.1}),
        record("eager", "fp16", 12.0, energy=unavailable, launch={"share": 0.2})]}))
    (tmp_path / "fidelity.json").write_text(json.dumps({"target": [0.97, 1.03], "spec": {"shape": [2, 3, 224, 224]},
                                                        "variants": {
        "eager": {"trtbench_ms": 3.3, "ratios": {"timer": 1.01, "do_bench": 1.02}, "within": True},
        "compiled": {"error": "no timed compiled row at opt fp32"}}}))
    report = gpu_check.write_report("cuda", tmp_path).read_text()
    assert "| resnet34 | ran out of its share (stopped; its results so far are kept) | 110 | 110 |" in report
    assert "| tinyllama | not run | | |" in report
    assert "PASS: eager fp16 12.000 ms < fp32 30.000 ms (2.50x)." in report
    assert "- eager: PASS: trtbench 3.300 ms; ratios timer 1.010, do_bench 1.020" in report
    assert "- compiled: FAIL: no timed compiled row at opt fp32" in report
    assert "Not measured: pynvml is not installed." in report
    assert "| eager | fp16 | opt | ok | 12.000 | 20% |  |  |  |" in report


def test_fp16_that_does_not_beat_fp32_fails_with_its_launch_share():
    records = [record("eager", "fp32", 3.3, launch={"share": 0.95}),
               record("eager", "fp16", 4.9, launch={"share": 0.97})]
    verdict = gpu_check.compute_verdict(records, "cuda")
    assert verdict.startswith("FAIL: eager fp16 4.900 ms is not below fp32 3.300 ms") and "fp16 0.97" in verdict


def test_the_report_gives_the_paired_fidelity_ratios(tmp_path):
    pairs = [{"first": "trtbench", "trtbench_ms": 3.3, "timer_ms": 3.2, "ratios": {"timer": 1.031}},
             {"first": "reference", "trtbench_ms": 3.2, "timer_ms": 3.2, "ratios": {"timer": 1.0}}]
    (tmp_path / "fidelity.json").write_text(json.dumps({
        "target": [0.97, 1.03], "spec": {"shape": [2, 3, 64, 64], "precision": "fp32"}, "pairs": 2, "variants": {
            "eager": {"run_ms": 3.5, "pairs": pairs, "ratios": {"timer": 1.0155}, "ranges": {"timer": [1.0, 1.031]},
                      "within": True}}}))
    lines = gpu_check.fidelity_lines(tmp_path, "cpu")
    assert lines[0].startswith("trtbench's median at 2x3x64x64 fp32 over torch.utils.benchmark's Timer, in 2 pairs of "
                               "a trtbench worker and a reference process")
    assert "- eager: PASS: median ratio over 2 pairs timer 1.016 (1.000-1.031); the run's median 3.500 ms" in lines
