"""The history's database: SQLite (a file) or PostgreSQL (a URL), one schema through DB-API and each one's
:class:`Dialect`, migrated forward on opening; a run added whole, once (docs/outputs.md, "The history")."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from dataclasses import asdict, dataclass, fields
from importlib import resources
from pathlib import Path
from typing import Any, Callable, ContextManager, Iterator

from trtbench.core.errors import UserInputError
from trtbench.core.stats import Interval
from trtbench.core.status import RunStatus
from trtbench.history.figures import Figure, Machine, Point, RunRow, SeriesKey, StoredRun

BUSY_TIMEOUT_S = 60
POSTGRES_PREFIXES = ("postgresql://", "postgres://")
INSTALL_HINT = "pip install 'trtbench[history-postgres]' (psycopg 3)"

MIGRATIONS = {int(f.name[:4]): f for f in resources.files(__package__).joinpath("migrations").iterdir()
              if f.name.endswith(".sql")}
STORE_VERSION = max(MIGRATIONS)
KEY_COLUMNS = tuple(f.name for f in fields(SeriesKey))


@dataclass(frozen=True)
class Dialect:
    """What one database needs said its own way. The store's SQL names each parameter ``{name}``, rendered in the
    driver's style (``mark``), so no literal in a statement is ever taken for a parameter."""

    mark: str  # a named parameter in the driver's style, ``{}`` its name
    begin: tuple[str, ...]  # what starts a transaction that holds the database's write lock (one writer at a time)
    connect: Callable[[str], Any]  # an autocommitting connection, rows read by column name (sqlite3.Row, dict_row)
    setup: tuple[str, ...]  # run on each connection before anything else
    exists: Callable[[str], bool]  # whether a history is there to read
    recreate: Callable[[str], ContextManager["Store"]]  # an empty store that becomes the history at its end
    skip_stored: str = " ON CONFLICT ({}) DO NOTHING"  # ends an INSERT that skips a row whose key ``{}`` is stored


def _connect_postgres(url: str):
    try:
        import psycopg
        from psycopg.rows import dict_row
    except ImportError as err:
        raise UserInputError("--history", f"'{url.split('@')[-1]}' is a PostgreSQL URL and psycopg is not installed",
                             INSTALL_HINT) from err
    try:
        return psycopg.connect(url, autocommit=True, row_factory=dict_row)
    except psycopg.Error as err:
        raise UserInputError("--history", f"cannot connect to PostgreSQL: {str(err).strip()}",
                             "check the URL (postgresql://user@host/db), the server and its access rules") from err


def _connect_sqlite(path: str):
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    except (OSError, sqlite3.Error) as err:
        raise UserInputError("--history", f"cannot open {path}: {err}",
                             "give a writable SQLite file path or a postgresql:// URL") from err
    connection.row_factory = sqlite3.Row
    return connection


@contextlib.contextmanager
def _recreate_sqlite(where: str) -> Iterator["Store"]:
    """A new file built beside ``where`` that then replaces it, so a corrupt or lost file is never read."""
    fresh = f"{where}.rebuild"
    for stale in (fresh, f"{fresh}-wal", f"{fresh}-shm"):
        Path(stale).unlink(missing_ok=True)
    with Store(fresh) as store:
        yield store
        store.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    for stale in (f"{where}-wal", f"{where}-shm", f"{fresh}-wal", f"{fresh}-shm"):
        Path(stale).unlink(missing_ok=True)
    os.replace(fresh, where)


@contextlib.contextmanager
def _recreate_postgres(url: str) -> Iterator["Store"]:
    """The database at ``url`` with its tables dropped and the schema created anew."""
    with Store(url) as store:
        store._execute("DROP TABLE points, series, runs, store_version")
        store._migrate()
        yield store


SQLITE = Dialect(mark=":{}", begin=("BEGIN IMMEDIATE",), connect=_connect_sqlite,
                 setup=(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_S * 1000}", "PRAGMA journal_mode = WAL",
                        "PRAGMA foreign_keys = ON"),
                 exists=lambda where: Path(where).is_file(), recreate=_recreate_sqlite)
POSTGRES = Dialect(mark="%({})s", begin=("BEGIN", "SELECT pg_advisory_xact_lock(4343)"), connect=_connect_postgres,
                   setup=(), exists=lambda where: True, recreate=_recreate_postgres)


def dialect_of(where: str) -> Dialect:
    """PostgreSQL's for a ``postgresql://`` URL, else SQLite's."""
    return POSTGRES if str(where).startswith(POSTGRES_PREFIXES) else SQLITE


def _statements(script: str) -> Iterator[str]:
    """A migration file's statements, each ended where SQLite's parser ends it (a ``;`` in a literal stays)."""
    statement = ""
    for line in script.splitlines(keepends=True):
        statement += line
        if sqlite3.complete_statement(statement):
            yield statement
            statement = ""


class Store:
    """An open history database (:func:`open_store`); a context manager that closes it."""

    def __init__(self, where: str):
        self.where = str(where)
        self.dialect = dialect_of(self.where)
        self.connection = self.dialect.connect(self.where)
        try:
            for statement in self.dialect.setup:
                self.connection.execute(statement)
            self._migrate()
        except sqlite3.DatabaseError as err:
            self.close()
            raise UserInputError(self.where, f"not a readable history database ({err})", "recreate it from the runs' "
                                 f"folders: trtbench history rebuild DIR... --history {self.where}") from err
        except UserInputError:
            self.close()
            raise

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self.connection.close()

    def _execute(self, text: str, **params):
        """``text`` with each ``{name}`` bound to ``params[name]``."""
        return self.connection.execute(text.format(**{name: self.dialect.mark.format(name) for name in params}), params)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """One transaction, holding the write lock from its start (SQLite waits up to its busy timeout for it)."""
        for statement in self.dialect.begin:
            self.connection.execute(statement)
        try:
            yield
        except BaseException:
            self.connection.execute("ROLLBACK")
            raise
        self.connection.execute("COMMIT")

    @property
    def version(self) -> int:
        """The schema's version (0: an empty database)."""
        return int(self._execute("SELECT version FROM store_version").fetchone()["version"])

    def _migrate(self) -> None:
        """Bring the schema to :data:`STORE_VERSION` in one transaction: each migration after the stored version."""
        with self.transaction():
            self._execute("CREATE TABLE IF NOT EXISTS store_version (version INTEGER NOT NULL)")
            self._execute("INSERT INTO store_version (version) SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM store_version)")
            version = self.version
            if version > STORE_VERSION:
                raise UserInputError(self.where, f"history version {version} is newer than this trtbench's "
                                                 f"({STORE_VERSION})", "upgrade trtbench")
            for target in range(version + 1, STORE_VERSION + 1):
                for statement in _statements(MIGRATIONS[target].read_text()):
                    self.connection.execute(statement)
                self._execute("UPDATE store_version SET version = {version}", version=target)

    def _insert(self, table: str, row: dict, end: str = "") -> None:
        """Insert ``row`` (its keys the columns), ``end`` closing the statement."""
        values = ", ".join(f"{{{column}}}" for column in row)
        self._execute(f"INSERT INTO {table} ({', '.join(row)}) VALUES ({values}){end}", **row)

    def add(self, adding: StoredRun) -> bool:
        """Add a run with its figures, in one transaction; False (nothing added) when its id is stored already,
        unless stored as a run that did not complete and now with another status (its resumption replaces it)."""
        run = adding.run
        with self.transaction():
            stored = self._execute("SELECT status FROM runs WHERE run_id = {run_id}", run_id=run.run_id).fetchone()
            if stored is not None and stored["status"] in (RunStatus.COMPLETE, run.status):
                return False
            self._execute("DELETE FROM runs WHERE run_id = {run_id}", run_id=run.run_id)  # its points cascade
            self._insert("runs", {**run.__dict__, "versions": json.dumps(dict(run.versions), sort_keys=True),
                                  "machine": json.dumps(asdict(run.machine), sort_keys=True),
                                  "accepted": int(run.accepted)})
            for figure in {f.key.series_id: f for f in adding.figures}.values():
                self._add_figure(run.run_id, figure)
        return True

    def _add_figure(self, run_id: str, figure: Figure) -> None:
        key, value = figure.key, figure.value
        self._insert("series", {"series_id": key.series_id, **key.__dict__},
                     end=self.dialect.skip_stored.format("series_id"))
        self._insert("points", {"run_id": run_id, "series_id": key.series_id, "status": str(figure.status),
                                **{name: getattr(value, name, None) for name in ("value", "low", "high")},
                                "reason": figure.reason})

    def runs(self) -> list[RunRow]:
        """Every run, by start time (then id)."""
        columns = ", ".join(f.name for f in fields(RunRow))
        rows = self._execute(f"SELECT {columns} FROM runs ORDER BY started_at, run_id").fetchall()
        return [RunRow(**{**r, "versions": json.loads(r["versions"]), "accepted": bool(r["accepted"]),
                          "machine": Machine.from_dict(json.loads(r["machine"]))}) for r in rows]

    def series(self) -> dict[str, SeriesKey]:
        rows = self._execute(f"SELECT series_id, {', '.join(KEY_COLUMNS)} FROM series").fetchall()
        return {r["series_id"]: SeriesKey(**{name: r[name] for name in KEY_COLUMNS}) for r in rows}

    def points(self) -> list[Point]:
        """Every run's figure in every series, by series id, then run id."""
        runs, keys = {run.run_id: run for run in self.runs()}, self.series()
        rows = self._execute("SELECT * FROM points ORDER BY series_id, run_id").fetchall()
        return [Point(runs[r["run_id"]], Figure(keys[r["series_id"]], r["status"], None if r["value"] is None else
                                                Interval(r["value"], r["low"], r["high"]), r["reason"])) for r in rows]

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
            self._execute("UPDATE runs SET accepted = 1 WHERE run_id = {run_id}", run_id=run_id)

    def forget(self, run_id: str) -> None:
        """Drop a run and its points (its folder keeps it: ``ingest`` adds it back)."""
        with self.transaction():
            self._execute("DELETE FROM runs WHERE run_id = {run_id}", run_id=run_id)  # its points cascade


def open_store(where: str | Path) -> Store:
    """The history at ``where``: a SQLite file's path (created, with its folder, where missing) or a PostgreSQL URL."""
    return Store(str(where))
