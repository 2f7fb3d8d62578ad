"""TorchScript's deprecation through a real run: the tiny CNN traced, scripted and exported under the installed
torch (2.14 warns on every torch.jit trace, script, save and load), each timed in a worker process of its own
(whose saved file is where the raw torch.jit.save warning used to reach the console), its files published and
reloaded in a fresh process. The note is in each TorchScript row's warnings and in report.md with the successor
and its measured speed; nothing of torch.jit's reaches stderr raw."""

from __future__ import annotations

import json

import pytest

from conftest import TINY_CONFIG
from helpers.cli import trtbench
from trtbench.results.resultset import ResultSet
from trtbench.variants.torchscript_common import TORCHSCRIPT_DEPRECATION

NOTE = "TorchScript: deprecated in torch 2.14; successor: exported / aoti"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    import copy
    import os

    import yaml

    from helpers.paths import ASSETS, REPO

    folder = tmp_path_factory.mktemp("deprecation")
    config = copy.deepcopy(TINY_CONFIG)
    config["variants"] = ["eager", "traced", "scripted", "exported"]
    config["benchmark"].update(shapes=["opt"], isolation="process", processes=1)
    config["output"] = {"dir": str(folder / "out"), "save_artifacts": True, "cold_start": True}
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(ASSETS), os.environ.get("PYTHONPATH", "")])}
    proc = trtbench("--config", str(path), "--p99-budget", "10000", env=env)
    return proc, folder / "out"


def test_the_fact_is_the_issue_s_note():
    assert TORCHSCRIPT_DEPRECATION.note == NOTE


def test_no_raw_torch_jit_warning_reaches_the_console(run):
    proc, _ = run
    assert proc.returncode == 0, proc.stderr
    for stream in (proc.stderr, proc.stdout):
        assert "FutureWarning" not in stream and "torch.jit" not in stream and "warnings.warn" not in stream, stream


def test_each_torchscript_row_carries_the_note_once_in_place_of_torch_jit_s_warnings(run):
    _, out = run
    rows = {r["case"]["variant"]: r for r in json.loads((out / "results.json").read_text())["records"]}
    for name in ("traced", "scripted"):
        assert rows[name]["status"] == "ok", rows[name]["reason"]
        assert rows[name]["warnings"].count(NOTE) == 1
        assert not [w for w in rows[name]["warnings"] if "torch.jit" in w], rows[name]["warnings"]
    assert not [w for name in ("eager", "exported") for w in rows[name]["warnings"] if "deprecated" in w]


def test_report_names_the_deprecation_with_the_successor_s_measured_speed(run):
    _, out = run
    report = (out / "report.md").read_text()
    results = ResultSet.load(out)
    section = report.split("## Deprecated upstream", 1)[1].split("\n## ", 1)[0]
    assert f"- traced, scripted: {NOTE}" in section
    assert section.count(NOTE) == 1
    warned = "## Warnings captured" in report
    captured = report.split("## Warnings captured", 1)[1].split("\n## ", 1)[0] if warned else ""
    assert NOTE not in captured, "said once, in its own section, not again among the captured warnings"
    assert "- deprecated: traced, scripted: built with what upstream deprecates (TorchScript)" in report
    exported = next(r for r in results if r.case.variant == "exported")
    for name in ("traced", "scripted"):
        row = next(r for r in results if r.case.variant == name)
        speed = results.analysis.paired_speedup(row, exported)
        line = next(line for line in section.splitlines() if line.startswith(f"| {name} | fp32 | opt "))
        assert f"| exported | {exported.stats.median:.3f} |" in line
        assert f"{speed.value:.2f}x [{speed.low:.2f}-{speed.high:.2f}] of its speed" in line
    assert "- not timed in this run: aoti; list them in `variants`" in section
    assert "| ok, deprecated |" in report  # the speedup table's status note on the TorchScript rows
    (recommendation,) = json.loads((out / "results.json").read_text())["recommendations"]
    deprecated_choice = recommendation["choice"]["variant"] in ("traced", "scripted")
    assert ({s["variant"] for s in recommendation.get("successors", [])}
            == ({"exported", "aoti"} if deprecated_choice else set()))
