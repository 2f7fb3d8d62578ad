"""The history's database: SQLite (a file, the default ``results/history.sqlite``) or PostgreSQL (a URL), one
schema for both through DB-API, migrated forward on opening (:data:`MIGRATIONS`). A run is added whole in one
transaction, once. The tables and the reasons: docs/outputs.md, "The history".
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

from trtbench.core.errors import UserInputError
from trtbench.core.stats import Interval
from trtbench.history.figures import Figure, RunRow, SeriesKey, StoredRun

BUSY_TIMEOUT_S = 60
POSTGRES_PREFIXES = ("postgresql://", "postgres://")
INSTALL_HINT = "pip install 'trtbench[history-postgres]' (psycopg 3)"

MIGRATIONS: dict[int, tuple[str, ...]] = {
    1: ("CREATE TABLE runs (run_id TEXT PRIMARY KEY, started_at TEXT NOT NULL, name TEXT NOT NULL, "
        "status TEXT NOT NULL, source TEXT NOT NULL, versions TEXT NOT NULL, machine TEXT NOT NULL, "
        "accepted INTEGER NOT NULL DEFAULT 0)",
        "CREATE TABLE series (series_id TEXT PRIMARY KEY, model TEXT NOT NULL, model_hash TEXT NOT NULL, "
        "variant TEXT NOT NULL, options TEXT NOT NULL, precision_name TEXT NOT NULL, point TEXT NOT NULL, "
        "threads INTEGER NOT NULL, knobs TEXT NOT NULL, device TEXT NOT NULL, machine TEXT NOT NULL, "
        "figure TEXT NOT NULL)",
        "CREATE TABLE points (run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE, "
        "series_id TEXT NOT NULL REFERENCES series (series_id), status TEXT NOT NULL, value DOUBLE PRECISION, "
        "low DOUBLE PRECISION, high DOUBLE PRECISION, reason TEXT NOT NULL, PRIMARY KEY (run_id, series_id))",
        "CREATE INDEX points_series ON points (series_id)"),
    2: ("ALTER TABLE runs ADD COLUMN label TEXT NOT NULL DEFAULT ''",),
}
STORE_VERSION = max(MIGRATIONS)
TABLES = ("points", "series", "runs", "store_version")
SERIES_COLUMNS = ("series_id", "model", "model_hash", "variant", "options", "precision_name", "point", "threads",
                  "knobs", "device", "machine", "figure")


@dataclass(frozen=True)
class PointRow:
    """A run's figure in a series."""

    run_id: str
    series_id: str
    status: str
    value: Optional[Interval]
    reason: str


def is_postgres(where: str) -> bool:
    return str(where).startswith(POSTGRES_PREFIXES)


def _connect_postgres(url: str):
    try:
        import psycopg
    except ImportError as err:
        raise UserInputError("--history", f"'{url.split('@')[-1]}' is a PostgreSQL URL and psycopg is not installed",
                             INSTALL_HINT) from err
    try:
        return psycopg.connect(url, autocommit=True)
    except psycopg.Error as err:
        raise UserInputError("--history", f"cannot connect to PostgreSQL: {str(err).strip()}",
                             "check the URL (postgresql://user@host/db), the server and its access rules") from err


def _connect_sqlite(path: Path):
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    except (OSError, sqlite3.Error) as err:
        raise UserInputError("--history", f"cannot open {path}: {err}",
                             "give a writable SQLite file path or a postgresql:// URL") from err
    try:
        connection.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_S * 1000}")
        connection.execute("PRAGMA journal_mode = WAL")
        connection.execute("PRAGMA foreign_keys = ON")
    except sqlite3.DatabaseError as err:
        connection.close()
        raise UserInputError(str(path), f"not a readable history database ({err})",
                             f"recreate it from the runs' folders: trtbench history rebuild DIR... --history {path}") \
            from err
    return connection


class Store:
    """An open history database (:func:`open_store`); a context manager that closes it."""

    def __init__(self, where: str):
        self.where = str(where)
        self.postgres = is_postgres(self.where)
        self.connection = _connect_postgres(self.where) if self.postgres else _connect_sqlite(Path(self.where))
        try:
            self._migrate()
        except (sqlite3.DatabaseError, UserInputError):
            self.close()
            raise

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self.connection.close()

    def _sql(self, text: str) -> str:
        return text.replace("?", "%s") if self.postgres else text

    def _execute(self, text: str, params: tuple = ()):
        return self.connection.execute(self._sql(text), params)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """One transaction; SQLite takes its write lock at once (``BEGIN IMMEDIATE``), waiting up to its busy
        timeout for another writer."""
        if self.postgres:
            with self.connection.transaction():
                yield
            return
        self.connection.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.connection.execute("ROLLBACK")
            raise
        self.connection.execute("COMMIT")

    @property
    def version(self) -> int:
        """The schema's version (0: an empty database)."""
        exists = ("SELECT 1 FROM information_schema.tables WHERE table_name = 'store_version'" if self.postgres
                  else "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'store_version'")
        if self._execute(exists).fetchone() is None:
            return 0
        row = self._execute("SELECT version FROM store_version").fetchone()
        return int(row[0]) if row else 0

    def _migrate(self) -> None:
        """Bring the schema to :data:`STORE_VERSION`, one version at a time, each in one transaction."""
        try:
            with self.transaction():
                if self.postgres:  # two processes opening a new database at once: one migrates
                    self._execute("SELECT pg_advisory_xact_lock(4343)")
                version = self.version
                if version > STORE_VERSION:
                    raise UserInputError(self.where, f"history version {version} is newer than this trtbench's "
                                                     f"({STORE_VERSION})", "upgrade trtbench")
                if version == 0:
                    self._execute("CREATE TABLE store_version (version INTEGER NOT NULL)")
                    self._execute("INSERT INTO store_version (version) VALUES (0)")
                for target in range(version + 1, STORE_VERSION + 1):
                    for statement in MIGRATIONS[target]:
                        self._execute(statement)
                    self._execute("UPDATE store_version SET version = ?", (target,))
        except sqlite3.DatabaseError as err:
            raise UserInputError(self.where, f"not a readable history database ({err})",
                                 f"recreate it from the runs' folders: trtbench history rebuild DIR... "
                                 f"--history {self.where}") from err

    def add(self, adding: StoredRun) -> bool:
        """Add a run with its figures, in one transaction; False (nothing added) when its id is stored already,
        unless stored as a run that did not complete and now with another status (its resumption replaces it)."""
        run = adding.run
        with self.transaction():
            stored = self._execute("SELECT status FROM runs WHERE run_id = ?", (run.run_id,)).fetchone()
            if stored is not None and (stored[0] == "complete" or stored[0] == run.status):
                return False
            if stored is not None:
                self._delete(run.run_id)
            self._execute("INSERT INTO runs (run_id, started_at, name, status, source, versions, machine, accepted, "
                          "label) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                          (run.run_id, run.started_at, run.name, run.status, run.source,
                           json.dumps(run.versions, sort_keys=True), json.dumps(run.machine, sort_keys=True),
                           int(run.accepted), run.label))
            for figure in {f.key.series_id: f for f in adding.figures}.values():
                self._add_figure(run.run_id, figure)
        return True

    def _add_figure(self, run_id: str, figure: Figure) -> None:
        key = figure.key
        self._execute(f"INSERT INTO series ({', '.join(SERIES_COLUMNS)}) VALUES ({', '.join('?' * 12)}) "
                      "ON CONFLICT (series_id) DO NOTHING",
                      (key.series_id, key.model, key.model_hash, key.variant, key.options, key.precision, key.point,
                       key.threads, key.knobs, key.device, key.machine, key.figure))
        value = figure.value
        self._execute("INSERT INTO points (run_id, series_id, status, value, low, high, reason) "
                      "VALUES (?, ?, ?, ?, ?, ?, ?)",
                      (run_id, key.series_id, str(figure.status), *(
                          (value.value, value.low, value.high) if value is not None else (None, None, None)),
                       figure.reason))

    def runs(self) -> list[RunRow]:
        """Every run, by start time (then id)."""
        rows = self._execute("SELECT run_id, started_at, name, status, label, source, versions, machine, accepted "
                             "FROM runs ORDER BY started_at, run_id").fetchall()
        return [RunRow(r[0], r[1], r[2], r[3], r[4], r[5], json.loads(r[6]), json.loads(r[7]), bool(r[8]))
                for r in rows]

    def series(self) -> dict[str, SeriesKey]:
        rows = self._execute(f"SELECT {', '.join(SERIES_COLUMNS)} FROM series").fetchall()
        return {r[0]: SeriesKey(*r[1:7], int(r[7]), *r[8:]) for r in rows}

    def points(self) -> list[PointRow]:
        rows = self._execute("SELECT run_id, series_id, status, value, low, high, reason FROM points "
                             "ORDER BY series_id, run_id").fetchall()
        return [PointRow(r[0], r[1], r[2], Interval(r[3], r[4], r[5]) if r[3] is not None else None, r[6])
                for r in rows]

    def find_run(self, text: str) -> RunRow:
        """The run whose id is ``text`` or starts with it, or whose label is ``text``; bad input otherwise."""
        runs = self.runs()
        found = [r for r in runs if r.run_id == text] or [r for r in runs if r.run_id.startswith(text)] or \
            [r for r in runs if text and r.label == text]
        if len(found) != 1:
            why = "no stored run has that id or label" if not found else f"{len(found)} runs match it"
            raise UserInputError("RUN", f"'{text}': {why}", "give a run id as 'trtbench history runs' lists it")
        return found[0]

    def accept(self, run_id: str) -> None:
        """From ``run_id`` on, its series' levels are the new normal: the gate's baseline starts there."""
        with self.transaction():
            self._execute("UPDATE runs SET accepted = 1 WHERE run_id = ?", (run_id,))

    def forget(self, run_id: str) -> None:
        """Drop a run and its points (its folder keeps it: ``ingest`` adds it back)."""
        with self.transaction():
            self._delete(run_id)

    def _delete(self, run_id: str) -> None:
        self._execute("DELETE FROM points WHERE run_id = ?", (run_id,))
        self._execute("DELETE FROM runs WHERE run_id = ?", (run_id,))

    def clear(self) -> None:
        """Drop every table and create the schema anew (PostgreSQL's rebuild)."""
        with self.transaction():
            for table in TABLES:
                self._execute(f"DROP TABLE IF EXISTS {table}")
        self._migrate()


def open_store(where: str | Path) -> Store:
    """The history at ``where``: a SQLite file's path (created, with its folder, where missing) or a PostgreSQL URL."""
    return Store(str(where))
