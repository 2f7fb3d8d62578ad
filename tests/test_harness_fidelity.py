"""benchmarks/harness_fidelity.py: trtbench's readings and the reference's are taken in pairs, side by side in time,
alternating which goes first, each pair's ratio from its own two readings (fake timers: nothing is timed here); and
the ``--results`` mode rebuilds a run's row from what its workers were given."""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path

import pytest
import torch
import yaml

from trtbench.config.config import load_config

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("harness_fidelity", ROOT / "benchmarks" / "harness_fidelity.py")
fidelity = importlib.util.module_from_spec(spec)
sys.modules["harness_fidelity"] = fidelity  # its dataclasses look their module up
spec.loader.exec_module(fidelity)
gpu_spec = importlib.util.spec_from_file_location("gpu_check", ROOT / "scripts" / "gpu_check.py")
gpu_check = importlib.util.module_from_spec(gpu_spec)
gpu_spec.loader.exec_module(gpu_check)


def test_pairs_alternate_which_goes_first_and_each_ratio_is_its_own_pairs():
    events = []
    machine = iter([10.0, 20.0, 11.0, 22.0, 12.0, 24.0, 13.0, 26.0, 14.0, 28.0])  # each reading, in time order

    def trtbench(i):
        events.append(("trtbench", i))
        return next(machine)

    def reference(i):
        events.append(("reference", i))
        return {"timer_ms": next(machine), "do_bench_ms": 5.0}

    pairs = fidelity.paired(trtbench, reference, 5)
    assert events == [("trtbench", 0), ("reference", 0), ("reference", 1), ("trtbench", 1), ("trtbench", 2),
                      ("reference", 2), ("reference", 3), ("trtbench", 3), ("trtbench", 4), ("reference", 4)]
    assert [p["first"] for p in pairs] == ["trtbench", "reference", "trtbench", "reference", "trtbench"]
    assert [(p["trtbench_ms"], p["timer_ms"]) for p in pairs] == [(10.0, 20.0), (22.0, 11.0), (12.0, 24.0),
                                                                   (26.0, 13.0), (14.0, 28.0)]
    assert [p["ratios"]["timer"] for p in pairs] == [0.5, 2.0, 0.5, 2.0, 0.5]
    assert pairs[0]["ratios"]["do_bench"] == 2.0


def test_the_summary_is_the_median_pair_ratio_judged_against_the_target():
    pairs = [{"ratios": {"timer": r, "do_bench": 1.0}} for r in (0.99, 1.20, 1.01)]
    found = fidelity.summary(pairs)
    assert found["ratios"] == {"timer": 1.01, "do_bench": 1.0}
    assert found["ranges"]["timer"] == [0.99, 1.20] and found["within"]
    assert not fidelity.summary(pairs[1:])["within"]  # median of 1.20 and 1.01: 1.105


def test_a_row_timed_outside_rebuilt_workers_is_named():
    in_process = {"metrics": {"isolation": {"method": "in_process"}}}
    hosted = {"metrics": {"isolation": {"method": "process", "hosts": "the saved .onnx file"}}}
    assert "in its own process" in fidelity._record_error(in_process, "ort")
    assert "the saved .onnx file" in fidelity._record_error(hosted, "ort")
    assert fidelity._record_error({"metrics": {"isolation": {"method": "process", "hosts": "a rebuild"}}},
                                  "eager") is None
    assert fidelity._record_error({}, "eager") is None  # a result without isolation facts: workers, rebuilt


def _run(tmp_path: Path, threads: int) -> tuple[Path, Path]:
    config = gpu_check.part_configs("cpu")["resnet34"]
    config["variants"] = ["eager", {"compiled": {"mode": "max-autotune-no-cudagraphs"}}]
    config["channels_last"] = True
    path = tmp_path / "resnet34.yaml"
    path.write_text(yaml.safe_dump(config))
    options = next(e for e in load_config(path).variants if e.name == "compiled").options_text
    case = {"model": "torchvision:resnet34", "variant": "compiled", "precision": "fp32", "point": "opt",
            "input_shapes": [[2, 3, 64, 64]], "threads": threads, "device": "cpu", "options": options}
    results = tmp_path / "run"
    results.mkdir()
    (results / "results.json").write_text(json.dumps({"records": [
        {"case": case, "rounds": [[3.0, 5.0], [4.0]], "metrics": {"isolation": {"method": "process",
                                                                              "hosts": "a rebuild"}}}]}))
    return results, path


def test_the_results_mode_rebuilds_the_row_from_what_its_workers_were_given(tmp_path):
    results, config = _run(tmp_path, threads=1)
    args = argparse.Namespace(variants="compiled,eager", point="opt", precision="fp32")
    rows, spec = fidelity.run_rows(results, config, args, tmp_path / "work")
    assert rows["eager"] == "no timed eager row at opt fp32"
    row = rows["compiled"]
    assert spec["shape"] == [2, 3, 64, 64] and row.label == "opt" and row.run_ms == 4.0
    recipe = row.recipe  # the run's settings, not the reference's own: threads, options, memory format
    assert (recipe.variant, recipe.precision, recipe.threads, recipe.channels_last) == ("compiled", "fp32", 1, True)
    assert recipe.options["compiled"].mode == "max-autotune-no-cudagraphs" and recipe.artifact is None
    payload = torch.load(recipe.payload, weights_only=True)
    assert list(payload["inputs"]) == ["opt"] and payload["inputs"]["opt"][0].is_contiguous(
        memory_format=torch.channels_last)
    assert row.timing.block_s == 0.25 and row.knobs.text == ""


def test_a_config_that_does_not_make_the_row_is_named(tmp_path):
    results, config = _run(tmp_path, threads=2)
    args = argparse.Namespace(variants="compiled", point="opt", precision="fp32")
    rows, _ = fidelity.run_rows(results, config, args, tmp_path / "work")
    assert "makes no build group with compiled's row" in rows["compiled"]
    assert "pass the config the run was made from" in rows["compiled"]


@pytest.mark.parametrize("argv, says", [(["--results", "run"], "--results needs --config"),
                                        (["--results", "run", "--config", "c.yaml"], "no results.json there"),
                                        (["--results", "made", "--config", "missing.yaml"], "missing.yaml: --config")])
def test_bad_input_is_named_with_exit_code_2(tmp_path, monkeypatch, capsys, argv, says):
    (tmp_path / "made").mkdir()
    (tmp_path / "made" / "results.json").write_text(json.dumps({"records": []}))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["harness_fidelity.py", *argv])
    with pytest.raises(SystemExit) as exited:
        fidelity.main()
    assert exited.value.code == 2 and says in capsys.readouterr().err
