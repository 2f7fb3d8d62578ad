"""Runs into the history: a result set appended by the run or merge that wrote it, or folders ingested later
(``ingest``: each run not stored yet, by ``run_id``; ``rebuild``: the database anew from the folders) (docs/outputs.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, ContextManager

from trtbench.core.errors import UserInputError
from trtbench.history.figures import stored_runs
from trtbench.history.store import Store, dialect_of, open_store
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


def _into(opening: Callable[[str], ContextManager[Store]], where: str, dirs: list[str]) -> Ingested:
    """The runs of each folder in ``dirs`` added to the store ``opening(where)``; every folder is read before anything
    is written (one unreadable folder is bad input)."""
    if not dirs:
        raise UserInputError("DIR", "no folder given", "name the output folders of the runs to ingest")
    sets = [(str(Path(d)), ResultSet.load(d)) for d in dirs]
    with opening(where) as store:
        totals = [append(store, results, source) for source, results in sets]
    return Ingested(*(sum(getattr(t, name) for t in totals) for name in ("added", "known", "figures")))


def ingest(where: str, dirs: list[str]) -> Ingested:
    """Add the runs of each folder in ``dirs`` to the history at ``where`` (idempotent by run id)."""
    return _into(open_store, where, dirs)


def rebuild(where: str, dirs: list[str]) -> Ingested:
    """Recreate the history at ``where`` from ``dirs`` alone."""
    return _into(dialect_of(where).recreate, where, dirs)


def existing(where: str) -> str:
    """``where`` where it names a history that exists (a PostgreSQL URL is taken as one); bad input otherwise."""
    if not dialect_of(where).exists(where):
        raise UserInputError(str(where), "no history database here",
                             "give --history the store runs append to (default results/history.sqlite), or fill "
                             "one: trtbench history ingest DIR...")
    return where
