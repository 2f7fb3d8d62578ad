"""A run's or a merge's figures appended to its history (docs/outputs.md, "The history")."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Optional, Union

from trtbench.core.outdir import DEFAULT_HISTORY, RESULTS_ROOT
from trtbench.history.ingest import append
from trtbench.history.store import open_store
from trtbench.results.resultset import ResultSet


def check_history(where: Union[str, bool, None]) -> None:
    """Open the history once, before the run: a bad path or URL is bad input before anything is written."""
    if where:
        open_store(str(where)).close()


def history_for(history: Union[str, bool, None], out_dir: Path) -> Optional[str]:
    """Where a run or a merge appends: ``output.history`` or ``--history`` (false: nowhere), else the default."""
    if history is not None:
        return history or None
    return DEFAULT_HISTORY if out_dir.resolve().parent == RESULTS_ROOT.resolve() else None


def append_history(where: Union[str, bool, None], results: ResultSet, out_dir: Path) -> str:
    """Append ``results`` (written to ``out_dir``) to the history at ``where``; a line saying what was done."""
    if not where:
        return ""
    started = time.perf_counter()
    try:
        with open_store(str(where)) as store:
            done = append(store, results, str(out_dir))
    except Exception as err:  # sqlite3, psycopg or a lost connection: the run's folder keeps its results
        kind = "locked" if isinstance(err, sqlite3.OperationalError) and "locked" in str(err) else type(err).__name__
        return (f"history: not appended to {where} ({kind}: {err}); add it later: trtbench history ingest {out_dir} "
                f"--history {where}")
    return f"{done.text(str(where))} in {time.perf_counter() - started:.2f} s"
