"""scripts/gpu_check.py: the GPU check's configs (valid trtbench configs on either device) and its report, from each
part's exit code and results (a part that ran out of its share says so, the others are reported); the fp16
localisation part as the CPU rehearsal runs it (eager names the planted layer, trt is skipped with its reason)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from trtbench.config.config import config_from_dict
from trtbench.config.plan import resolve
from trtbench.core.case import Case
from trtbench.core.record import Record
from trtbench.models.planted import planted_path
from trtbench.pipeline.diagnosis import Request, diagnose_config
from trtbench.results.resultset import ResultSet

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "gpu_check.py"
spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
gpu_check = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gpu_check)


@pytest.mark.parametrize("device", ["cuda", "cpu"])
def test_every_part_config_is_a_valid_config(device):
    configs = gpu_check.part_configs(device)
    assert set(configs) == ({"resnet34", "resnet50", "tinyllama", "localise"}
                            | ({"cuda_graphs"} if device == "cuda" else set()))
    for config in configs.values():
        parsed = config_from_dict(config)
        assert parsed.benchmark.max_build_s == 90
        if device == "cpu":
            resolve(parsed)  # resolves on this machine, as the rehearsal does
    assert configs["resnet34"]["variants"] == ["eager", "traced", "scripted", "exported", "compiled"]
    localised = {"eager", "trt", "compiled"} if device == "cuda" else {"eager", "trt"}
    assert set(configs["localise"]["variants"]) == localised


def record(variant: str, precision: str, median: float, **metrics) -> Record:
    """A row timed in one round of 3 calls, beside the others at the point."""
    case = Case(model="torchvision:resnet50", variant=variant, precision=precision, point="opt",
                input_shapes=((64, 3, 224, 224),), threads=1, device="cuda")
    return Record(case=case, environment="gpu", rounds=[[median] * 3], metrics=metrics)


def results_of(*records: Record) -> ResultSet:
    results = ResultSet(environments={"gpu": {"id": "gpu"}})
    for one in records:
        results.add(one)
    return results


def test_the_report_names_a_part_that_ran_out_and_judges_the_others(tmp_path):
    (tmp_path / "parts.tsv").write_text("resnet34\t124\t110\t110\nresnet50\t0\t20\t25\nfidelity\t0\t30\t50\n")
    (tmp_path / "resnet50").mkdir()
    unavailable = {"unavailable": "pynvml is not installed"}
    results_of(record("eager", "fp32", 30.0, energy=unavailable, launch={"share": 0.1}),
               record("eager", "fp16", 12.0, energy=unavailable, launch={"share": 0.2})).save(
        tmp_path / "resnet50" / "results.json")
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
    assert "- energy not measured: pynvml is not installed." in report
    assert "| eager | fp16 | opt | ok | 12.000 | 20% |  |  |  |" in report


def test_fp16_that_does_not_beat_fp32_fails_with_its_launch_share():
    records = results_of(record("eager", "fp32", 3.3, launch={"share": 0.95}),
                         record("eager", "fp16", 4.9, launch={"share": 0.97}))
    verdict = gpu_check.compute_verdict(records, "cuda")
    assert verdict.startswith("FAIL: eager fp16 4.900 ms is not below fp32 3.300 ms") and "fp16 0.97" in verdict


def test_the_verdict_gives_fp16s_paired_speedup_and_the_energy_section_the_reports_notes():
    """fp16's speedup as the report gives it (paired by round, with its interval), and the report's energy notes."""
    def timed(precision: str, ms: float, energy: dict) -> Record:
        rounds = [[ms * f, ms, ms * (2 - f)] for f in (0.98, 0.99, 0.97, 0.995, 0.985)]
        return Record(case=record("eager", precision, ms).case, environment="gpu", rounds=rounds,
                      block_round=list(range(5)), block_process=[0] * 5, metrics={"energy": energy})
    energy = {"joules_per_call": 0.5, "joules_per_call_ci": [0.4, 0.6], "source": "nvml", "idle_power_w": 60.0,
              "average_power_w": 250.0}
    results = results_of(timed("fp32", 30.0, energy), timed("fp16", 12.0, energy))
    speedup = results.speedup(next(r for r in results if r.case.precision == "fp16"))
    verdict = gpu_check.compute_verdict(results, "cuda")
    assert verdict == (f"PASS: eager fp16 12.000 ms < fp32 30.000 ms ({speedup.value:.2f}x "
                       f"[{speedup.low:.2f}-{speedup.high:.2f}]).")
    lines = gpu_check.energy_lines(results.records)
    assert lines[0].startswith("- J/inference: the device's energy counter (nvml) read around each block")
    assert gpu_check.energy_lines([]) == ["- energy not measured: no timed row.", ""]


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


def test_the_cpu_rehearsal_localises_the_planted_fp16_fault_on_eager(tmp_path):
    """The localise part's config and the script's command line (diagnose at fp16 into OUT/localise), then its
    report: eager names the planted layer, trt is skipped with its reason, compiled is not run on a CPU."""
    config = config_from_dict({**gpu_check.part_configs("cpu")["localise"],
                               "output": {"dir": str(tmp_path / "localise")}})
    outcome = diagnose_config(config, Request(precisions=["fp16"], minutes=1.0), say=lambda line: None)
    assert outcome.exit_code == 1  # a path diverges, as planted
    (tmp_path / "parts.tsv").write_text(f"localise\t{outcome.exit_code}\t12\t30\n")
    report = gpu_check.write_report("cpu", tmp_path).read_text()
    planted = planted_path(gpu_check.PLANTED_AT)
    assert "| localise | exit 1 (a path diverges, as planted; see below) | 12 | 30 |" in report
    assert f"- eager: PASS: names {planted}, the planted layer, by its splice and its taps" in report
    assert "- trt: SKIPPED: CUDA is not available on this machine" in report
    assert "- compiled: not on the CPU rehearsal: a CPU localises fp16 on eager only" in report


def diagnosis(variant: str, status: str, **found) -> dict:
    return {"variant": variant, "status": status, "named": None, "tap_layer": None, "confirmed": False, "reason": "",
            "output": "", "sentence": "", "builds": 2, "builds_announced": 2, **found}


def test_the_localisation_lines_never_pass_a_path_that_did_not_name_the_planted_layer(tmp_path):
    folder = tmp_path / "localise" / "diagnose"
    folder.mkdir(parents=True)
    planted = planted_path(gpu_check.PLANTED_AT)
    found = {"eager": diagnosis("eager", "diverges", named="blocks.1", tap_layer="blocks.1", confirmed=True,
                                sentence="eager at fp16 diverges at blocks.1"),
             "compiled": diagnosis("compiled", "agrees", output="max abs err 0.0008, rel 0.0003"),
             "trt": diagnosis("trt", "unavailable", reason="torch_tensorrt is not installed", builds=0,
                              builds_announced=0)}
    for variant, entry in found.items():
        (folder / f"{variant}-fp16-opt.json").write_text(json.dumps(entry))
    lines = gpu_check.localisation_lines(tmp_path, "cuda")
    assert f"- eager: FAIL: names blocks.1, not the planted {planted}: eager at fp16 diverges at blocks.1" in lines
    assert any(line.startswith("- compiled: NOT LOCALISED: the whole compiled fp16 build keeps the tolerance "
                               "(max abs err 0.0008, rel 0.0003)") for line in lines)
    assert "- trt: SKIPPED: torch_tensorrt is not installed" in lines
    (folder / "compiled-fp16-opt.json").unlink()
    found = diagnosis("eager", "diverges", named=planted, tap_layer="blocks.2", builds=5, builds_announced=5)
    (folder / "eager-fp16-opt.json").write_text(json.dumps(found))
    lines = gpu_check.localisation_lines(tmp_path, "cuda")
    assert f"- eager: PASS: names {planted}, the planted layer, by its splice (its taps named blocks.2); 5 builds, " \
           "5 announced." in lines
    assert "- compiled: NOT RUN: no diagnosis written (the part did not run, or ran out of its share before " \
           "writing one)." in lines
    assert not any("PASS" in line for line in lines if line.startswith(("- compiled", "- trt")))
