"""The same history on a real PostgreSQL 15 server (started by the suite, tests/helpers/postgres.py) and in
SQLite: byte-equal exports, equal series and steps, equal gate exit codes run by run, and a rebuild."""

from __future__ import annotations

import pytest

from helpers.history import series_folders, write_run
from helpers.postgres import postgres_server
from trtbench import api
from trtbench.cli import main


@pytest.fixture(scope="module")
def server():
    with postgres_server() as url:
        yield url


def test_postgres_and_sqlite_agree_byte_for_byte(server, tmp_path):
    folders = series_folders(tmp_path, [5.0] * 4 + [5.75] * 3)
    folders.append(write_run(tmp_path / "failed", 8, {"eager": 10.0, "traced": 5.75},
                             versions={"torch": "2.15.0"}, status={"traced": "build traced fp32: RuntimeError: no"}))
    sqlite = str(tmp_path / "h.sqlite")
    codes = {sqlite: [], server: []}
    for folder in folders:  # each run appended, then gated, as a nightly job does
        for where in (sqlite, server):
            assert main(["history", "ingest", str(folder), "--history", where]) == 0
            codes[where].append(main(["gate", str(folder), "--history", where]))
    assert codes[sqlite] == codes[server] == [0, 0, 0, 0, 1, 1, 1, 1]
    exported = api.export_csv(server)
    assert exported == api.export_csv(sqlite) and exported.count("\n") > 8 * 6
    assert len(api.history_series(server)) == 7  # a new torch is beside each point, never in its series' key
    newly = api.gate(folders[-1], server).regressions
    assert any("newly failed: build traced" in r.text for r in newly)
    on_server, in_file = api.history_series(server), api.history_series(sqlite)
    assert [(s.key, s.steps) for s in on_server] == [(s.key, s.steps) for s in in_file]
    assert api.accept("run-005", server) == api.accept("run-005", sqlite) == "run-005"
    assert [main(["gate", str(folders[6]), "--history", where]) for where in (server, sqlite)] == [0, 0]
    assert api.rebuild(folders, server).added == len(folders)
    rebuilt = str(tmp_path / "rebuilt.sqlite")
    api.rebuild(folders, rebuilt)
    assert api.export_csv(server) == api.export_csv(rebuilt)


def test_a_wrong_server_is_bad_input(server, capsys):
    bad = server.replace("host=", "host=/nonexistent")
    assert main(["history", "--history", bad]) == 2
    assert "cannot connect to PostgreSQL" in capsys.readouterr().err
