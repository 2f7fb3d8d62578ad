"""The history's SQLite store through the command line and the API: ingest is idempotent by run id, series follow
start times, four processes appending at once lose nothing, rebuild gives the live database's series, the
committed version-1 and version-2 databases migrate (the latter read back as its writer read it), and bad input
exits 2 naming the fix."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.history import V2_DATABASE, V2_READ_BACK, read_back, series_folders, write_run
from helpers.paths import REPO
from trtbench import api
from trtbench.cli import main
from trtbench.history.series import SeriesFilter, read_history
from trtbench.history.store import STORE_VERSION, open_store

V1_DATABASE = REPO / "tests" / "assets" / "history_v1.sqlite"


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> list[Path]:
    return series_folders(tmp_path_factory.mktemp("runs"), [5.0] * 4 + [5.75] * 3)


def history(capsys, *args) -> tuple[int, str, str]:
    code = main(["history", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


def test_ingest_twice_adds_nothing_and_series_follow_start_times(folders, tmp_path, capsys):
    store = tmp_path / "h.sqlite"
    shuffled = [folders[i] for i in (4, 0, 6, 2, 1, 5, 3)]
    code, out, _ = history(capsys, "ingest", *shuffled, "--history", store)
    assert code == 0 and "7 run(s) added" in out
    first = api.export_csv(store)
    code, out, _ = history(capsys, "ingest", *folders, "--history", store)
    assert code == 0 and "0 run(s) added" in out and "7 already stored" in out
    assert api.export_csv(store) == first
    (median,) = read_history(str(store), SeriesFilter(variant="traced", figure="median"))
    assert [p.run.run_id for p in median.points] == [f"run-{i:03d}" for i in range(1, 8)]
    (step,) = median.steps
    assert median.points[step.index].run.run_id == "run-005" and median.worse(step) and 0.13 < step.change < 0.17
    assert step.before.low < 5.0 < step.before.high or abs(step.before.value - 5.0) < 0.05


def test_history_lists_each_series_with_its_step(folders, tmp_path, capsys):
    store = tmp_path / "h.sqlite"
    api.ingest(folders, store)
    code, out, _ = history(capsys, "--history", store, "--variant", "traced", "--figure", "median")
    assert code == 0
    assert "traced fp32 opt t2 median: 5.7" in out and "step +1" in out and "from run run-005" in out
    assert "1 series, 1 step(s)" in out
    code, out, _ = history(capsys, "--history", store, "--since", "2026-01-07")
    assert "(2 run(s), latest run-007)" in out and "step" not in out.replace("step(s)", "")


def test_history_html_draws_each_series_with_its_step_at_its_first_run(folders, tmp_path, capsys):
    store, page = tmp_path / "h.sqlite", tmp_path / "history.html"
    api.ingest(folders, store)
    code, out, _ = history(capsys, "html", page, "--history", store, "--variant", "traced", "--figure", "median")
    assert code == 0 and str(page) in out
    html = page.read_text()
    assert "traced fp32 opt t2 median" in html and html.count('class="spot pt"') == 7  # a point per run
    assert "step at run run-005" in html  # the step's hover names its first run after it
    code, _, err = history(capsys, "html", "--history", store)
    assert code == 2 and "OUT.html" in err


def test_four_processes_appending_at_once_lose_nothing(tmp_path):
    runs = [write_run(tmp_path / f"r{i}", i, {"eager": 10.0, "traced": 5.0}) for i in range(1, 21)]
    store = tmp_path / "h.sqlite"
    script = ("import sys; from trtbench import api; "
              "[api.ingest([d], sys.argv[1]) for d in sys.argv[2:]]")
    procs = [subprocess.Popen([sys.executable, "-c", script, str(store), *map(str, runs[i::4])], cwd=REPO)
             for i in range(4)]
    assert [p.wait(timeout=300) for p in procs] == [0, 0, 0, 0]
    with open_store(store) as opened:
        assert len(opened.runs()) == 20
        assert len(opened.points()) == 20 * 7  # eager: median, p99, accuracy; traced: those and speedup
        assert opened.connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_rebuild_gives_the_live_series_even_over_a_corrupt_file(folders, tmp_path, capsys):
    live = tmp_path / "live.sqlite"
    for folder in folders:  # appended one run at a time, as runs do
        api.ingest([folder], live)
    lost = tmp_path / "lost.sqlite"
    lost.write_bytes(b"not a database, a disk's garbage" * 100)
    code, _, err = history(capsys, "--history", lost)
    assert code == 2 and "trtbench history rebuild" in err
    code, out, _ = history(capsys, "rebuild", *folders, "--history", lost)
    assert code == 0 and "7 run(s) added" in out
    assert api.export_csv(lost) == api.export_csv(live)
    assert [s.steps for s in api.history_series(lost)] == [s.steps for s in api.history_series(live)]


def test_the_committed_version_1_database_migrates(tmp_path):
    copy = tmp_path / "v1.sqlite"
    shutil.copy(V1_DATABASE, copy)
    with sqlite3.connect(copy) as old:
        assert old.execute("SELECT version FROM store_version").fetchone() == (1,)
        assert "label" not in [row[1] for row in old.execute("PRAGMA table_info(runs)")]
        before = old.execute("SELECT COUNT(*) FROM points").fetchone()[0]
    with open_store(copy) as store:
        assert store.version == STORE_VERSION == 3
        runs = store.runs()
        assert runs and all(r.label == "" for r in runs) and len(store.points()) == before > 0
    folder = write_run(tmp_path / "new", 9, {"eager": 10.0, "traced": 5.0})
    assert api.ingest([folder], copy).added == 1
    with open_store(copy) as store:
        assert store.runs()[-1].label == "commit-9"


def test_a_version_2_database_reads_back_as_the_code_that_wrote_it_read_it(tmp_path, capsys):
    copy = tmp_path / "v2.sqlite"
    shutil.copy(V2_DATABASE, copy)
    with sqlite3.connect(copy) as old:
        assert old.execute("SELECT version FROM store_version").fetchone() == (2,)
        assert "precision_name" in [row[1] for row in old.execute("PRAGMA table_info(series)")]
    with open_store(copy) as store:
        assert store.version == STORE_VERSION == 3
        assert read_back(store) == json.loads(V2_READ_BACK.read_text())
        assert all(key.series_id == series_id for series_id, key in store.series().items())
    with sqlite3.connect(copy) as new:
        assert "precision" in [row[1] for row in new.execute("PRAGMA table_info(series)")]
    assert main(["gate", "--history", str(copy)]) == 1 and "newly failed" in capsys.readouterr().out


def test_accept_and_forget(folders, tmp_path, capsys):
    store = tmp_path / "h.sqlite"
    api.ingest(folders, store)
    assert main(["gate", "--history", str(store)]) == 1
    code, out, _ = history(capsys, "forget", "run-007", "--history", store)
    assert code == 0 and "forgot run run-007" in out
    with open_store(store) as opened:
        assert len(opened.runs()) == 6
    code, out, _ = history(capsys, "accept", "run-005", "--history", store)
    assert code == 0
    assert main(["gate", "--history", str(store)]) == 0
    assert api.ingest([folders[-1]], store).added == 1  # the folder keeps it


@pytest.mark.parametrize("args, where", [
    (["accept", "run-999"], "RUN"),
    (["accept"], "RUN"),
    (["export"], "export"),
    (["ingest"], "DIR"),
    (["show", "results/x"], "results/x"),
])
def test_bad_input_exits_2_naming_the_key(folders, tmp_path, capsys, args, where):
    store = tmp_path / "h.sqlite"
    api.ingest(folders[:1], store)
    code, _, err = history(capsys, *args, "--history", store)
    assert code == 2 and f"error: {where}" in err and "fix:" in err


@pytest.mark.parametrize("args, key", [
    (["--figures", "p95"], "--figures"),
    (["--threshold", "5"], "--threshold"),
    (["--history", "/proc/no/such/history.sqlite"], "--history"),
])
def test_bad_gate_flags_exit_2_naming_the_flag(folders, tmp_path, capsys, args, key):
    store = tmp_path / "h.sqlite"
    api.ingest(folders, store)
    assert main(["gate", "--history", str(store), *args]) == 2
    assert key in capsys.readouterr().err


def test_no_history_is_bad_input(tmp_path, capsys):
    code, _, err = history(capsys, "--history", tmp_path / "none.sqlite")
    assert code == 2 and "history ingest" in err
    assert main(["gate", "--history", str(tmp_path / "none.sqlite")]) == 2
    assert not (tmp_path / "none.sqlite").exists()


def test_a_schema_5_run_gets_a_derived_id_and_its_generate_rows_their_series(tmp_path):
    """A results.json written before run ids (the generate and decoder serving run in tests/assets)."""
    store = tmp_path / "h.sqlite"
    old = REPO / "tests" / "assets" / "results_before_renames"
    assert api.ingest([old], store).added == 1
    assert api.ingest([old], store).added == 0, "its derived id is the same on every read"
    series = api.history_series(store)
    assert {s.key.figure for s in series} == {"ttft", "tpot"}
    assert all(p.run.run_id.startswith("d") and p.figure.value is not None for s in series for p in s.points)


def test_a_resumed_run_replaces_its_partial_and_nothing_replaces_a_complete_one(tmp_path):
    partial = write_run(tmp_path / "partial", 1, {"eager": 10.0})
    doc = json.loads((partial / "results.json").read_text())
    doc["runs"][0]["status"] = "failed"  # an error stopped it; the same command resumes it, under the same run id
    (partial / "results.json").write_text(json.dumps(doc))
    store = tmp_path / "h.sqlite"
    assert api.ingest([partial], store).added == 1
    resumed = write_run(tmp_path / "resumed", 1, {"eager": 10.0, "traced": 5.0})
    assert api.ingest([resumed], store).added == 1 and api.ingest([partial], store).added == 0
    with open_store(store) as opened:
        assert [(r.run_id, r.status) for r in opened.runs()] == [("run-001", "complete")]
        assert len(opened.points()) == 7
