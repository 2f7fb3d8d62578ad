"""The same history on a real PostgreSQL 15 server (started by the suite, tests/helpers/postgres.py) and in
SQLite: byte-equal exports, equal series and steps, equal gate exit codes run by run, and a rebuild; and the
committed version-2 history, copied onto the server as it is, migrates and reads back as its writer read it."""

from __future__ import annotations

import json
import shutil
import sqlite3

import pytest

from helpers.history import V2_DATABASE, V2_READ_BACK, read_back, series_folders, write_run
from helpers.postgres import postgres_server
from trtbench import api
from trtbench.cli import main
from trtbench.history.store import STORE_VERSION, open_store


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


def test_a_version_2_database_migrates_and_reads_back_as_the_code_that_wrote_it_read_it(server, tmp_path):
    psycopg = pytest.importorskip("psycopg")
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute("CREATE DATABASE version_2")
    url = server.replace("/postgres?", "/version_2?")
    shutil.copy(V2_DATABASE, tmp_path / "v2.sqlite")
    with sqlite3.connect(tmp_path / "v2.sqlite") as old, psycopg.connect(url, autocommit=True) as new:
        for kind, name, sql in old.execute("SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL "
                                           "ORDER BY rowid").fetchall():
            new.execute(sql)  # the schema as version 2 created it
            rows = old.execute(f"SELECT * FROM {name}").fetchall() if kind == "table" else []
            if rows:
                new.cursor().executemany(f"INSERT INTO {name} VALUES ({', '.join(['%s'] * len(rows[0]))})", rows)
        assert new.execute("SELECT version FROM store_version").fetchone() == (2,)
    with open_store(url) as store:
        assert store.version == STORE_VERSION == 3
        assert read_back(store) == json.loads(V2_READ_BACK.read_text())
