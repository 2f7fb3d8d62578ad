"""Runs into the history: a result set appended by the run or merge that wrote it, or folders ingested later.

The folders' ``results.json`` stay the truth: ``ingest`` adds each run not stored yet (by ``run_id``), whatever its
schema, and ``rebuild`` recreates the database from the folders alone (a SQLite file is built beside the old one
and then replaces it, so a corrupt or lost file is never read).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from trtbench.core.errors import UserInputError
from trtbench.history.figures import stored_runs
from trtbench.history.store import Store, is_postgres, open_store
from trtbench.results.resultset import ResultSet


@dataclass(frozen=True)
class Ingested:
    """What an ingest did: runs added, runs already stored, figures added."""

    added: int
    known: int
    figures: int

    def text(self, where: str) -> str:
        return (f"history {where}: {self.added} run(s) added ({self.figures} figure(s)), {self.known} already "
                f"stored")


def append(store: Store, results: ResultSet, source: str) -> Ingested:
    """Add each run of ``results`` (read from folder ``source``) that ``store`` lacks."""
    added = known = figures = 0
    for run in stored_runs(results, source):
        if store.add(run):
            added, figures = added + 1, figures + len(run.figures)
        else:
            known += 1
    return Ingested(added, known, figures)


def _total(totals: list[Ingested]) -> Ingested:
    return Ingested(*(sum(getattr(t, name) for t in totals) for name in ("added", "known", "figures")))


def _loaded(dirs: list[str]) -> list[tuple[str, ResultSet]]:
    """Every folder's result set, read before anything is written (one unreadable folder is bad input)."""
    if not dirs:
        raise UserInputError("DIR", "no folder given", "name the output folders of the runs to ingest")
    return [(str(Path(d)), ResultSet.load(d)) for d in dirs]


def ingest(where: str, dirs: list[str]) -> Ingested:
    """Add the runs of each folder in ``dirs`` to the history at ``where`` (idempotent by run id)."""
    sets = _loaded(dirs)
    with open_store(where) as store:
        totals = [append(store, results, source) for source, results in sets]
    return _total(totals)


def rebuild(where: str, dirs: list[str]) -> Ingested:
    """Recreate the history at ``where`` from ``dirs`` alone."""
    sets = _loaded(dirs)
    if is_postgres(where):
        with open_store(where) as store:
            store.clear()
            totals = [append(store, results, source) for source, results in sets]
    else:
        path = Path(where)
        fresh = path.with_name(path.name + ".rebuild")
        for stale in (fresh, Path(f"{fresh}-wal"), Path(f"{fresh}-shm")):
            stale.unlink(missing_ok=True)
        with open_store(fresh) as store:
            totals = [append(store, results, source) for source, results in sets]
            store.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        for stale in (Path(f"{path}-wal"), Path(f"{path}-shm")):
            stale.unlink(missing_ok=True)
        os.replace(fresh, path)
        Path(f"{fresh}-wal").unlink(missing_ok=True)
        Path(f"{fresh}-shm").unlink(missing_ok=True)
    return _total(totals)


def existing(where: str) -> str:
    """``where`` where it names a history that exists (a PostgreSQL URL is taken as one); bad input otherwise."""
    if not is_postgres(where) and not Path(where).is_file():
        raise UserInputError(str(where), "no history database here",
                             "give --history the store runs append to (default results/history.sqlite), or fill "
                             "one: trtbench history ingest DIR...")
    return where
