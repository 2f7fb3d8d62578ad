"""Crash safety of a run's output directory: resume after SIGKILL, --fresh, the lock, bad output paths."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import kill_when
from trtbench.results.journal import JOURNAL_NAME, Journal
from trtbench.core.outdir import OutputDir
from trtbench.results.resultset import ResultSet


def trtbench(*args, env, timeout=300):
    return subprocess.run([sys.executable, "-m", "trtbench", *args], capture_output=True, text=True, env=env,
                          timeout=timeout)


def journal_records(out) -> dict[str, dict]:
    """case key -> record dict of every complete record line in the journal."""
    records = {}
    for line in (out / JOURNAL_NAME).read_text().splitlines():
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        if entry["kind"] == "record":
            records[entry["record"]["case_key"]] = entry["record"]
    return records


@pytest.fixture
def slow_config(tiny_config, write_config):
    """Three variants at three points, each point warming up for 0.3 s: a kill lands mid-run."""
    tiny_config["benchmark"].update(iterations=200, warmup_s=0.3)
    return write_config(tiny_config)


def test_a_killed_run_resumes_where_it_stopped_and_fresh_starts_over(slow_config, tmp_path, subprocess_env, capsys):
    """The kill needs a process of its own; the same command then resumes (and --fresh starts over) here,
    through the command line's own entry point (a fresh process for each would only import torch again)."""
    from trtbench.cli import main

    out = tmp_path / "resumed"
    command = [sys.executable, "-m", "trtbench", "--config", str(slow_config), "--output", str(out), "--quiet"]
    kill_when(command, subprocess_env, lambda: (out / JOURNAL_NAME).exists() and bool(journal_records(out)),
              "a record in the journal", output=out)
    before = journal_records(out)
    assert 0 < len(before) < 9, f"the kill must land mid-run ({len(before)} records)"
    assert not (out / "results.json").exists(), "results are written at the end, atomically"

    # the kill may land between two journal lines of one point: whole points are kept, the rest re-measured
    points = {}
    for old in before.values():
        points.setdefault(old["case"]["point"], []).append(old)
    kept = {old["case_key"]: old for olds in points.values() if len(olds) == 3 for old in olds}

    capsys.readouterr()
    assert main(["--config", str(slow_config), "--output", str(out), "--quiet"]) == 0
    err = capsys.readouterr().err
    if kept:  # a kill inside the first point keeps no whole point: nothing to say then
        assert f"resumed: kept {len(kept)} case(s)" in err
    else:
        assert "resumed:" not in err
    results = ResultSet.load(out)
    assert len(results) == 9 and all(r.status == "ok" for r in results)
    assert {(r.case.variant, r.case.point) for r in results} == {
        (v, p) for v in ("eager", "traced", "scripted") for p in ("min", "opt", "max")}
    by_key = {r.case.key: r for r in results}
    for key, old in kept.items():  # kept as they were measured, not measured again
        assert by_key[key].rounds == old["rounds"]
    for key in set(before) - set(kept):  # a cut point's journaled cases were timed again with the rest
        assert by_key[key].rounds != before[key]["rounds"]
    assert all(sum(map(len, r.rounds)) == 200 for r in results)
    resumed_run = json.loads((out / "results.json").read_text())["runs"][-1]
    assert resumed_run["resumed_cases"] == len(kept)
    killed_id = next(json.loads(line)["run_id"] for line in (out / JOURNAL_NAME).read_text().splitlines()
                     if '"kind":"run"' in line)
    assert resumed_run["run_id"] == killed_id, "a resumed run is the same run (the history replaces its partial)"
    assert (out / "artifacts" / "manifest.json").is_file()
    assert {a["file"] for a in json.loads((out / "artifacts" / "manifest.json").read_text())["artifacts"]} == {
        "traced_fp32.ts", "scripted_fp32.ts"}

    assert main(["--config", str(slow_config), "--output", str(out), "--quiet", "--fresh"]) == 0
    assert "resumed" not in capsys.readouterr().err
    again = {r.case.key: r for r in ResultSet.load(out)}
    assert set(again) == set(by_key)
    assert all(again[key].rounds != by_key[key].rounds for key in by_key), "--fresh measures every case again"
    assert json.loads((out / "results.json").read_text())["runs"][-1]["resumed_cases"] == 0
    assert json.loads((out / "results.json").read_text())["runs"][-1]["run_id"] != killed_id, "--fresh: a new run"


def test_a_line_torn_by_a_crash_is_ignored_and_its_case_measured_again(tmp_path):
    from trtbench.core.case import Case
    from trtbench.core.record import Record

    journal = Journal(tmp_path)
    case = Case(model="m", variant="eager", precision="fp32", point="opt", input_shapes=((1, 3),), threads=1,
                device="cpu")
    journal.part(Record(case=case, environment="e", rounds=[[1.0, 2.0]]))
    journal.part(Record(case=Case(**{**case.to_dict(), "input_shapes": ((2, 3),), "point": "max"}),
                          environment="e", status="interrupted"))
    torn = json.dumps({"kind": "record", "record": Record(case=case, environment="e").to_dict()})
    with open(journal.path, "a") as fh:
        fh.write(torn[: len(torn) // 2])  # the crash cut this line short
    state = journal.read()
    assert list(state.records) == [case.key]  # interrupted and torn lines are measured again
    assert state.records[case.key].rounds == [[1.0, 2.0]]


def test_a_second_run_into_a_locked_directory_exits_2_naming_it(tiny_config, write_config, tmp_path, subprocess_env):
    from trtbench.cli import main

    out = tmp_path / "busy"
    path = write_config(tiny_config)
    with OutputDir(out):
        proc = trtbench("--config", str(path), "--output", str(out), env=subprocess_env)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert f"another trtbench run is writing to '{out}'" in proc.stderr and "fix:" in proc.stderr
        assert "Traceback" not in proc.stderr and "build " not in proc.stdout
        assert sorted(p.name for p in out.iterdir()) == [".trtbench.lock"], "nothing written"
    # the lock dies with its holder: the same command then runs (through the same entry point, in this process)
    assert main(["--config", str(path), "--output", str(out), "--quiet", "--variants", "eager"]) == 0
    assert (out / "results.json").is_file()


def test_the_lock_is_refused_in_process_too(tmp_path):
    from trtbench.core.errors import UserInputError

    with OutputDir(tmp_path / "d"):
        with pytest.raises(UserInputError) as info:
            OutputDir(tmp_path / "d", key="--output").acquire()
    assert info.value.where == "--output" and str(tmp_path / "d") in info.value.problem
    with OutputDir(tmp_path / "d"):  # released on exit
        pass


def test_the_report_is_written_under_the_runs_lock_or_its_own_and_refused_where_another_run_holds_it(tmp_path):
    """The output folder writes the report's files while its lock is held: inside a run's hold the writer joins
    it (the lock outlives the writer, for the run), on its own (a merge) it takes the lock, and a folder another
    process holds is refused naming the writer's key, with nothing written."""
    from trtbench.core.errors import UserInputError
    from trtbench.report.blocks import Heading
    from trtbench.report.writer import ReportHead, write_report

    out = tmp_path / "d"
    with OutputDir(out):
        files = write_report(out, ResultSet(), ReportHead([Heading(1, "a run")]), [])
        assert sorted(p.name for p in files.values()) == ["report.html", "report.md", "results.csv", "results.json"]
        with pytest.raises(UserInputError):  # still held: the writer let go of its share only
            OutputDir(out).acquire()
    other = tmp_path / "e"
    holder = subprocess.Popen([sys.executable, "-c", "import time; from trtbench.core.outdir import OutputDir; "
                               f"OutputDir({str(other)!r}).acquire(); print('held', flush=True); time.sleep(60)"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(UserInputError) as info:
            write_report(other, ResultSet(), ReportHead([Heading(1, "a merge")]), [], key="--output")
        assert info.value.where == "--output" and sorted(p.name for p in other.iterdir()) == [".trtbench.lock"]
    finally:
        holder.kill()
        holder.wait()
    # its own lock, then released
    write_report(other, ResultSet(), ReportHead([Heading(1, "a merge")]), [], key="--output")
    with OutputDir(out), OutputDir(other):
        pass


def test_an_output_path_that_is_a_file_exits_2_without_a_traceback(tiny_config, write_config, tmp_path, capsys):
    from trtbench.cli import main

    target = tmp_path / "a-file"
    target.write_text("not a directory")
    code = main(["--config", str(write_config(tiny_config)), "--output", str(target), "--quiet"])
    captured = capsys.readouterr()
    assert code == 2
    assert f"trtbench: error: output.dir: '{target}' exists and is a file" in captured.err and "fix:" in captured.err
    assert "Traceback" not in captured.err
    assert target.read_text() == "not a directory"


def test_a_complete_run_closes_its_journal_so_the_same_command_measures_anew(tiny_config, tmp_path):
    from conftest import run_dict

    tiny_config["variants"] = ["eager"]
    tiny_config["output"] = {"dir": str(tmp_path / "out"), "save_artifacts": False, "cold_start": False}
    first = run_dict(tiny_config)
    journal = tmp_path / "out" / JOURNAL_NAME
    assert first.exit_code == 0 and json.loads(journal.read_text().splitlines()[-1]) == {"kind": "complete"}
    second = run_dict(tiny_config)
    assert second.resumed == 0
    assert first.results.runs[-1]["run_id"] != second.results.runs[-1]["run_id"], "a new run, not a resumption"
    rounds = [[r.rounds for r in outcome.results] for outcome in (first, second)]
    assert rounds[0] != rounds[1]  # measured again, not copied from the first run


def test_a_point_cut_between_journal_lines_is_measured_again_whole(tiny_config, tmp_path):
    from conftest import run_dict

    tiny_config["output"].update(dir=str(tmp_path / "out"), save_artifacts=False)  # about records, not files
    first = run_dict(tiny_config)
    journal = tmp_path / "out" / JOURNAL_NAME
    lines = journal.read_text().splitlines()
    cut = [i for i, line in enumerate(lines) if json.loads(line)["kind"] == "record"
           and json.loads(line)["record"]["case"]["point"] == "opt"
           and json.loads(line)["record"]["case"]["variant"] == "traced"]
    # as if killed after eager's and before traced's line at opt (and before the run completed)
    kept_lines = [line for i, line in enumerate(lines) if i not in cut and json.loads(line)["kind"] != "complete"]
    journal.write_text("\n".join(kept_lines) + "\n")
    before = {r.case.key: r for r in first.results}

    again = run_dict(tiny_config)
    assert again.resumed == 6  # min and max, whole; opt is re-measured, eager's journaled opt too
    for record in again.results:
        same = record.rounds == before[record.case.key].rounds
        assert same == (record.case.point != "opt"), record.case


def test_a_save_journaled_in_another_environment_is_not_kept(tmp_path):
    """A resumed run keeps a save only where the run that made it had this run's environment: the records
    of another environment are measured again, so their files are published (and checked) again too."""
    journal = Journal(tmp_path)
    journal.environment({"id": "env-a"})
    journal.artifacts(("m", "fp32", "traced"), [{"file": "traced_fp32.ts"}])
    journal.environment({"id": "env-b"})
    journal.artifacts(("m", "fp32", "scripted"), [{"file": "scripted_fp32.ts"}])
    state = journal.read()
    assert state.saved_in == {("m", "fp32", "traced"): "env-a", ("m", "fp32", "scripted"): "env-b"}
