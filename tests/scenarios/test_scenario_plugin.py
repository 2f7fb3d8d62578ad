"""Scenarios are a plug-in: a toy scenario, one folder (tests/assets/tally_scenario/, laid out as trtbench's own) and
one registration line in this file, and nothing else, runs from a config, is journaled, resumes after a kill, merges
across shards, shows in the report, and a failed part of it makes the run exit 1. The runner names no scenario."""

from __future__ import annotations

import ast
import json
import os
import sys
from pathlib import Path

import pytest

from conftest import kill_when, run_dict
from tally_scenario import Tally
from trtbench.pipeline.merge import merge_runs
from trtbench.results.journal import JOURNAL_NAME
from trtbench.results.resultset import ResultSet
from trtbench.scenarios import register, registered, unregister
from helpers.paths import TESTS



def register_tally() -> None:
    register(Tally)


@pytest.fixture
def tally():
    register_tally()
    yield
    unregister("tally")


def tally_config(tiny_config, out: Path, **settings) -> dict:
    data = {**tiny_config, "scenarios": [{"tally": settings}], "output": {"dir": str(out), "save_artifacts": False}}
    data["benchmark"] = {**data["benchmark"], "shapes": ["opt"]}
    return data


def test_a_toy_scenario_runs_is_journaled_and_shows_in_the_report(tally, tiny_config, tmp_path):
    outcome = run_dict(tally_config(tiny_config, tmp_path / "out"))
    assert outcome.exit_code == 0
    parts = outcome.results.parts("tally")
    assert sorted(p.slot for p in parts) == ["eager", "scripted", "traced"]
    assert all(p.output_shape == (2, 10) for p in parts), parts
    assert len(outcome.results) == 0, "no latency scenario listed: no latency rows"
    kinds = [json.loads(line)["kind"] for line in (tmp_path / "out" / JOURNAL_NAME).read_text().splitlines()]
    assert kinds.count("tally") == 3
    doc = json.loads((tmp_path / "out" / "results.json").read_text())
    assert len(doc["tallies"]) == 3 and doc["tally_count"] == 3
    assert doc["runs"][0]["config"]["scenarios"] == [{"tally": {}}]
    report = (tmp_path / "out" / "report.md").read_text()
    assert "## Tally" in report and "| eager | 2x10 |" in report
    assert "## Speedup" not in report
    assert ResultSet.load(tmp_path / "out").parts("tally") == parts


def test_a_failed_toy_part_makes_the_run_exit_1_and_the_report_says_so(tally, tiny_config, tmp_path):
    assert run_dict(tally_config(tiny_config, tmp_path / "out", fail="traced")).exit_code == 1
    report = (tmp_path / "out" / "report.md").read_text()
    assert "## Failures" in report and "- tally: failed" in report


def test_a_scenario_that_raises_stops_the_run_with_exit_1_and_invents_no_rows(tally, tiny_config, tmp_path):
    outcome = run_dict(tally_config(tiny_config, tmp_path / "out", **{"raise": True}))
    assert outcome.exit_code == 1 and len(outcome.results) == 0, "no latency listed: no latency rows accounted"
    doc = json.loads((tmp_path / "out" / "results.json").read_text())
    assert doc["runs"][0]["status"] == "failed"
    assert "the toy scenario broke" in (tmp_path / "out" / "failures.log").read_text()
    assert "**Stopped by an error**" in (tmp_path / "out" / "report.md").read_text()
    assert not any(json.loads(line)["kind"] == "complete"
                   for line in (tmp_path / "out" / JOURNAL_NAME).read_text().splitlines()), "left resumable"


def test_a_killed_toy_run_resumes_keeping_its_journaled_parts(tally, tiny_config, write_config, tmp_path,
                                                             subprocess_env):
    out = tmp_path / "out"
    env = {**subprocess_env,
           "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), str(TESTS), subprocess_env["PYTHONPATH"]])}
    script = ("import sys, test_scenario_plugin as t; t.register_tally(); "
              "from trtbench.cli import main; sys.exit(main(sys.argv[1:]))")
    yaml_config = write_config(tally_config(tiny_config, out, pause_s=3), "tally.yaml")
    journal = out / JOURNAL_NAME
    kill_when([sys.executable, "-c", script, "--config", str(yaml_config), "--quiet"], env,
              lambda: journal.exists() and '"kind":"tally"' in journal.read_text(),
              "a part in the journal")  # it lands in the 3 s pause after the first part
    first = [json.loads(line)["tally"] for line in (out / JOURNAL_NAME).read_text().splitlines()
             if json.loads(line)["kind"] == "tally"]
    assert len(first) == 1 and not (out / "results.json").exists()

    outcome = run_dict(tally_config(tiny_config, out))  # the same run, resumed in this process
    parts = {p.slot: p for p in outcome.results.parts("tally")}
    assert sorted(parts) == ["eager", "scripted", "traced"]
    assert parts[first[0]["slot"]].pid == first[0]["pid"] != os.getpid(), "the journaled part is kept, not redone"
    assert sum(p.pid == os.getpid() for p in parts.values()) == 2


def test_toy_parts_merge_across_shards(tally, tiny_config, tmp_path):
    data = tally_config(tiny_config, tmp_path / "unused")
    data["sweep"] = {"threads": [1, 2]}  # two build groups: one per shard
    for i in range(2):
        run_dict({**data, "output": {"dir": str(tmp_path / f"s{i}"), "save_artifacts": False}}, shard=(i, 2))
    merged = merge_runs([str(tmp_path / "s0"), str(tmp_path / "s1")], tmp_path / "merged")
    assert sorted((p.threads, p.slot) for p in merged.results.parts("tally")) == [
        (t, s) for t in (1, 2) for s in ("eager", "scripted", "traced")]
    assert json.loads((tmp_path / "merged" / "results.json").read_text())["tally_count"] == 6
    assert "## Tally" in (tmp_path / "merged" / "report.md").read_text()
    assert merged.notes == [] and merged.exit_code == 0
    again = {**data, "scenarios": [{"tally": {"fail": "traced"}}]}  # shard 0 once more, traced's part now failed
    run_dict({**again, "output": {"dir": str(tmp_path / "again"), "save_artifacts": False}}, shard=(0, 2))
    twice = merge_runs([str(tmp_path / "s0"), str(tmp_path / "again")], tmp_path / "twice")
    noted = [note for note in twice.notes if note.startswith("tally ")]
    assert len(noted) == 1 and "traced: in more than one input; kept input 2's" in noted[0], twice.notes
    assert twice.exit_code == 1


def test_the_runner_names_no_scenario():
    import trtbench.pipeline.runner as runner

    tree = ast.parse(Path(runner.__file__).read_text())
    names = {c.name for c in registered()} | {c.__name__ for c in registered()}
    used = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)} | \
        {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)} | \
        {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)}
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                for alias in node.names} | {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert not names & used, f"the runner names scenarios {names & used}"
    assert not any(m and m.startswith("trtbench.scenarios.") for m in imported), imported
    assert {"latency", "serving", "profile"} <= {c.name for c in registered()}


def test_a_config_without_inputs_or_latency_is_valid_where_its_scenarios_need_neither(tiny_config):
    """Each scenario declares the config sections it reads: without ``inputs:`` a config of a scenario that
    reads none loads, and one that lists latency (which times the model on inputs) is refused naming it."""
    from trtbench.config.config import config_from_dict
    from trtbench.core.errors import UserInputError

    class Counts(Tally):
        name = "counts"
        needs = ()

    register(Counts)
    try:
        data = {key: value for key, value in tiny_config.items() if key != "inputs"}
        config = config_from_dict({**data, "scenarios": ["counts"]})
        assert config.inputs == [] and [s.name for s in config.scenarios] == ["counts"]
        with pytest.raises(UserInputError, match="inputs: is empty"):
            config_from_dict({**data, "scenarios": ["counts", "latency"]})
    finally:
        unregister("counts")
