"""trtbench merge: shards run separately (one as a process of its own) merge back into the unsharded case set; machines
stay apart (tables and plots keyed by environment); gaps and repeats are reported, never dropped."""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from helpers.cli import merge_command
from trtbench.core.errors import UserInputError
from trtbench.results.journal import Journal
from trtbench.pipeline.merge import merge_runs
from trtbench.report.sweeps import pareto_plot
from trtbench.results.resultset import ResultSet

OTHER_ENV = "0th3rmach1ne"


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """A 3-build-group matrix (threads 1, 2, 3) x batch 1, 2 x eager, traced: three shards, the first through the
    command line in a process of its own (as a scheduler would start it), the others and the same matrix unsharded
    (the reference case set) run meanwhile in this process (a process each would only import torch again)."""
    from conftest import ASSETS, REPO, TINY_CONFIG, run_dict

    root = tmp_path_factory.mktemp("matrix")
    config = {**copy.deepcopy(TINY_CONFIG), "name": "matrix", "variants": ["eager", "traced"],
              "sweep": {"batch": [1, 2], "threads": [1, 2, 3]}, "budget": {"p99_ms": 1000},
              "output": {"save_artifacts": False, "cold_start": False}}
    config["benchmark"]["iterations"] = 3
    path = root / "matrix.yaml"
    path.write_text(yaml.safe_dump(config))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), str(ASSETS)]))
    dirs = {f"s{i}": root / f"shard{i}" for i in range(3)} | {"full": root / "full"}
    procs = {name: subprocess.Popen([sys.executable, "-m", "trtbench", "run", "--config", str(path), "--output",
                                     str(dirs[name]), "--quiet", "--shard", f"{name[1]}/3",
                                     "--history", str(root / "shard-history.sqlite")],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for name in ("s0",)}
    try:
        for name, shard in (("full", None), ("s1", (1, 3)), ("s2", (2, 3))):
            outcome = run_dict({**config, "output": {**config["output"], "dir": str(dirs[name])}}, shard=shard)
            assert outcome.exit_code == 0, name
    finally:
        for name, proc in procs.items():
            _, err = proc.communicate(timeout=600)
            assert proc.returncode == 0, f"{name}: {err}"
    return dirs


def keys(results: ResultSet) -> set[str]:
    return {r.case.key for r in results}


def relabelled(src: Path, dst: Path, drop=lambda record: False, budget=None) -> Path:
    """A copy of a run as if measured on another machine (another environment id and CPU name)."""
    shutil.copytree(src, dst)
    doc = json.loads((dst / "results.json").read_text())
    (env,) = doc["environments"].values()
    doc["environments"] = {OTHER_ENV: {**env, "id": OTHER_ENV, "cpu": "Other CPU"}}
    for run in doc["runs"]:
        run["environment"] = OTHER_ENV
        if budget is not None:
            run["config"]["budget"]["p99_ms"] = budget
    doc["records"] = [{**r, "environment": OTHER_ENV} for r in doc["records"] if not drop(r)]
    (dst / "results.json").write_text(json.dumps(doc))
    return dst


def test_three_shards_merge_to_the_unsharded_case_set(runs, capsys, tmp_path):
    shards = [ResultSet.load(runs[f"s{i}"]) for i in range(3)]
    full = ResultSet.load(runs["full"])
    assert len(full) == 3 * 2 * 2 and all(len(s) == 4 for s in shards)
    for i in range(3):
        for j in range(i + 1, 3):
            assert not keys(shards[i]) & keys(shards[j]), f"shards {i} and {j} overlap"
    assert {r.case.threads for r in shards[0]} == {1}, "a shard holds whole build groups"
    code, stdout, stderr = merge_command(*(str(runs[f"s{i}"]) for i in range(3)), "--output", str(tmp_path / "merged"),
                                        capsys=capsys)
    assert code == 0, stderr
    assert "merge:" not in stderr, "nothing to report for a complete set of shards"
    merged = ResultSet.load(tmp_path / "merged")
    assert keys(merged) == keys(full), "no gaps and nothing extra"
    assert [run["shard"] for run in merged.runs] == [[0, 3], [1, 3], [2, 3]]
    assert "recommendation (p99 <= 1000 ms):" in stdout, "the budget comes from the inputs' configs"
    assert len(json.loads((tmp_path / "merged" / "results.json").read_text())["recommendations"]) == 1
    report = (tmp_path / "merged" / "report.md").read_text()
    assert "## Merge notes" not in report and "## Sweep" in report and "shard 2/3" in report
    page = (tmp_path / "merged" / "report.html").read_text()
    assert page.count("data:image/png;base64,") == len(list((tmp_path / "merged" / "plots").glob("*.png")))


def test_a_shard_appends_no_history_and_their_merge_appends_the_whole(runs, capsys, tmp_path, monkeypatch):
    from trtbench import api

    assert not (runs["s0"].parent / "shard-history.sqlite").exists(), "a --shard run writes no history"
    shards = [str(runs[f"s{i}"]) for i in range(3)]
    history = tmp_path / "h.sqlite"
    code, _, stderr = merge_command(*shards, "--output", str(tmp_path / "merged"), "--history", str(history),
                                    capsys=capsys)
    assert code == 0 and "3 run(s) added" in stderr
    series = api.history_series(history, api.HistoryQuery(figure="median"))
    assert len(series) == 3 * 2 * 2 and all(len(s.points) == 1 for s in series)
    assert {p.run.run_id for s in series for p in s.points} == {ResultSet.load(d).runs[0]["run_id"] for d in shards}
    assert api.ingest(shards, history).added == 0, "each shard's run is stored once, by its id"
    monkeypatch.chdir(tmp_path)
    merge_runs(shards, "elsewhere")
    assert not (tmp_path / "results").exists(), "a merge into a folder of the user's own appends only when told"
    outcome = merge_runs(shards, Path("results") / "merged")
    assert "3 run(s) added" in outcome.history and (tmp_path / "results" / "history.sqlite").is_file()


def test_a_missing_shard_is_reported(runs, tmp_path):
    outcome = merge_runs([str(runs["s0"]), str(runs["s1"])], tmp_path / "merged")
    assert any("shard(s) 2/3 are not among the inputs" in note for note in outcome.notes)
    assert outcome.exit_code == 1
    assert "2/3 are not among the inputs" in (tmp_path / "merged" / "report.md").read_text()


def test_two_machines_stay_apart(runs, capsys, tmp_path):
    other = relabelled(runs["full"], tmp_path / "other")
    out = tmp_path / "merged"
    code, stdout, stderr = merge_command(str(runs["full"]), str(other), "--output", str(out), capsys=capsys)
    assert code == 0, stderr
    merged = ResultSet.load(out)
    assert len(merged.environments) == 2 and len(merged) == 2 * len(ResultSet.load(runs["full"]))
    header = stdout.splitlines()[0].split()
    assert header[0] == "environment", "the table is keyed by environment"
    assert f"Other CPU [{OTHER_ENV}]" in stdout and f"[{OTHER_ENV}]" in (out / "report.md").read_text()
    (own,) = set(merged.environments) - {OTHER_ENV}
    for env in (own, OTHER_ENV):
        assert (out / "plots" / f"latency-{env}.png").is_file() and (out / "plots" / f"speedup-{env}.png").is_file()
    chart = pareto_plot(merged, "pareto.png")
    machines = {name.rsplit("[", 1)[1] for name in chart.series if name.startswith("points|")}
    assert machines == {f"{own}]", f"{OTHER_ENV}]"}, "one series per machine"
    assert len([name for name in chart.series if name.startswith("front|")]) == 2


def test_cases_missing_on_one_machine_are_reported_not_dropped(runs, capsys, tmp_path):
    def drop(record):
        case = record["case"]
        return (case["variant"] == "traced" and case["point"] == "b2" and case["threads"] == 3
                or case["variant"] == "eager" and case["point"] == "b1")

    other = relabelled(runs["full"], tmp_path / "other", drop=drop)
    out = tmp_path / "merged"
    code, _, stderr = merge_command(str(runs["full"]), str(other), "--output", str(out), capsys=capsys)
    assert code == 1
    note = "2 case(s) measured elsewhere but not on Other CPU"
    assert note in stderr and note in (out / "report.md").read_text()
    assert "eager fp32 b1 (1x3x16x16); " in stderr, "missing at every thread count"
    assert "traced fp32 b2 (2x3x16x16) (at 2 of 3 thread counts)" in stderr
    kept = [r for r in ResultSet.load(out)
            if r.case.variant == "traced" and r.case.point == "b2" and r.case.threads == 3]
    assert len(kept) == 1 and kept[0].environment != OTHER_ENV, "the lone measurement is in the merge"


def test_a_case_measured_twice_is_reported(runs, capsys, tmp_path):
    out = tmp_path / "merged"
    code, _, stderr = merge_command(str(runs["s0"]), str(runs["s0"]), "--output", str(out), capsys=capsys)
    assert code == 1
    assert stderr.count("measured in more than one input; kept input 2's") == 4
    assert "shard(s) 0/3 given more than once" in stderr
    assert "## Merge notes" in (out / "report.md").read_text()


def test_interrupted_input_is_reported(runs, tmp_path):
    copy_dir = tmp_path / "interrupted"
    shutil.copytree(runs["full"], copy_dir)
    doc = json.loads((copy_dir / "results.json").read_text())
    doc["runs"][0]["status"] = "interrupted"
    (copy_dir / "results.json").write_text(json.dumps(doc))
    outcome = merge_runs([str(copy_dir)], tmp_path / "merged")
    assert any("was interrupted" in note for note in outcome.notes) and outcome.exit_code == 1


def test_budget_flag_and_disagreeing_configs(runs, tmp_path):
    other = relabelled(runs["full"], tmp_path / "other", budget=5.0)
    with pytest.raises(UserInputError, match="different budgets: 5 ms, 1000 ms"):
        merge_runs([str(runs["full"]), str(other)], tmp_path / "merged")
    assert not (tmp_path / "merged").exists(), "bad input writes nothing"
    outcome = merge_runs([str(runs["full"]), str(other)], tmp_path / "merged", p99_budget_ms=0.001)
    assert outcome.p99_budget_ms == 0.001
    stored = json.loads((tmp_path / "merged" / "results.json").read_text())["recommendations"]
    assert len(stored) == 2 and not any(rec["fits"] for rec in stored) and all(rec["closest"] for rec in stored)


def killed_shard(src: Path, dst: Path, cases: int) -> Path:
    """The directory a shard leaves when it is killed after measuring ``cases`` cases: its journal (written
    by the run's own Journal, line by line) and no results.json, which a run writes only at its end."""
    results = ResultSet.load(src)
    journal = Journal(dst)
    dst.mkdir()
    (env,) = results.environments.values()
    journal.environment(env)
    for record in list(results)[:cases]:
        journal.part(record)
    return dst


def test_a_killed_shard_is_reported_with_its_journal_and_the_others_merged(runs, capsys, tmp_path):
    killed = killed_shard(runs["s1"], tmp_path / "shard-1", cases=2)
    never = tmp_path / "shard-2"  # a task cancelled before it started: no directory at all
    out = tmp_path / "merged"
    code, _, stderr = merge_command(str(runs["s0"]), str(killed), str(never), "--output", str(out), capsys=capsys)
    assert code == 1, stderr
    assert keys(ResultSet.load(out)) == keys(ResultSet.load(runs["s0"])), "the finished shard is merged"
    report = (out / "report.md").read_text()
    held = [f"{r.case.model} {r.case.label} {r.case.precision} {r.case.point} ({r.case.shapes}) t{r.case.threads} ok"
            for r in list(ResultSet.load(runs["s1"]))[:2]]
    for text in (report, stderr):
        assert f"input 2 ({killed}) has no results.json: its run did not finish" in text
        assert f"its journal holds 2 finished case(s): {'; '.join(held)}. Run the same command again" in text
        assert f"input 3 ({never}) does not exist: its run never started" in text
        assert "shard(s) 1/3, 2/3 are not among the inputs" in text
    assert f"2. `{killed}`: no results.json (see the merge notes)" in report


def test_only_killed_shards_still_give_a_report(runs, tmp_path):
    killed = [killed_shard(runs[f"s{i}"], tmp_path / f"shard-{i}", cases=i) for i in range(3)]
    outcome = merge_runs([str(d) for d in killed], tmp_path / "merged")
    assert outcome.exit_code == 1 and len(outcome.results) == 0
    assert [note.split(": its run did not finish")[0] for note in outcome.notes] == [
        f"input {i + 1} ({d}) has no results.json" for i, d in enumerate(killed)]
    assert "its journal holds no finished case" in outcome.notes[0]
    assert "## Merge notes" in (tmp_path / "merged" / "report.md").read_text()


def test_an_input_without_results_or_journal_is_reported(runs, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    outcome = merge_runs([str(runs["s0"]), str(empty)], tmp_path / "merged")
    assert outcome.exit_code == 1
    assert f"input 2 ({empty}) has no results.json and no journal.jsonl: its run never started" in outcome.notes[0]


def test_bad_inputs_and_outputs_exit_2_naming_them(runs, capsys, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    code, _, stderr = merge_command(str(empty), str(tmp_path / "nope"), "--output", str(tmp_path / "m"), capsys=capsys)
    assert code == 2 and f"{empty}: none of the 2 input(s) holds a trtbench run" in stderr
    assert not (tmp_path / "m").exists()
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "results.json").write_text("{")
    code, _, stderr = merge_command(str(runs["s0"]), str(broken), "--output", str(tmp_path / "m"), capsys=capsys)
    assert code == 2 and "results.json: not valid JSON" in stderr
    assert not (tmp_path / "m").exists()
    afile = tmp_path / "afile"
    afile.write_text("")
    code, _, stderr = merge_command(str(runs["s0"]), "--output", str(afile), capsys=capsys)
    assert code == 2 and "--output: " in stderr and "is a file" in stderr
    with pytest.raises(UserInputError, match="is input 1"):
        merge_runs([str(runs["s0"])], runs["s0"])
    with pytest.raises(UserInputError, match="holds a run"):
        merge_runs([str(runs["s0"])], runs["s1"])


def test_merge_keeps_each_record_whole_and_never_pools_processes_across_runs():
    """Two runs of one point (3 processes each) share no rounds: the merge keeps the later run's record as it was
    measured (its 3 processes and round ids, not 6 processes), and a point whose records come from different runs
    is noted, since its speedups would pair blocks that were not timed together."""
    import numpy as np
    from helpers.records import replicated

    def run(*records):
        results = ResultSet(environments={"e": {"id": "e"}}, runs=[{"name": "r", "environment": "e"}])
        for record in records:
            results.add(record)
        return results

    first = run(replicated("eager", np.full(8, 10.0), [1.0, 1.01, 0.99]),
                replicated("traced", np.full(8, 5.0), [1.0] * 3))
    again = run(replicated("eager", np.full(8, 12.0), [1.0, 1.02, 0.98], seed=4),
                replicated("traced", np.full(8, 6.0), [1.0] * 3, seed=5))
    merged, notes = ResultSet.merge([first, again])
    kept = {r.case.variant: r for r in merged}
    assert kept["eager"] == again.records[0] and kept["eager"].process_count == 3
    assert kept["eager"].block_series == again.records[0].block_series
    assert all("share no rounds" not in note for note in notes)  # the whole point from input 2
    mixed, notes = ResultSet.merge([first, run(again.records[1])])  # traced again, beside the first run's eager
    assert {r.case.variant: r.process_count for r in mixed} == {"eager": 3, "traced": 3}
    assert any("its records come from inputs 1, 2, whose runs share no rounds" in note for note in notes), notes


def test_a_merged_report_shows_the_regimes_of_its_points(capsys, tmp_path):
    """The regimes are recomputed from the records: a merge's report and results.json give them as a run's do."""
    from helpers.records import regime_results

    results = regime_results()
    results.runs.append({"name": "r", "environment": "e", "status": "complete"})
    results.save(tmp_path / "a" / "results.json")
    code, _, stderr = merge_command(str(tmp_path / "a"), "--output", str(tmp_path / "out"), capsys=capsys)
    assert code == 0, stderr
    report = (tmp_path / "out" / "report.md").read_text()
    assert "## Regimes" in report and "| scripted | fp32 | 1.03x [" in report
    (point,) = json.loads((tmp_path / "out" / "results.json").read_text())["regimes"]
    assert len(point["regimes"]) == 2 and {row["variant"] for row in point["rows"]} == {"scripted", "traced"}
