"""Crash-safe progress of a run: one JSON line per completed case (and per part joined to cases: a
case's serving results, a device's ceilings), appended as it completes.

A run killed by SIGKILL, the OOM killer or a preempted pod keeps every line it appended; the
same command on the same output directory reads them back and measures only what is missing.
Each line is written with one ``write`` on an ``O_APPEND`` descriptor and fsync'd, so lines
never interleave; a line cut short by a crash is ignored on reading. A later line for the same
case replaces an earlier one (a save that fails after timing, say). A run that completes every
case ends its journal with a ``complete`` line: nothing is left to resume, so running the same
command again measures anew.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from trtbench.measure.ceiling import Ceiling
from trtbench.core.record import Record
from trtbench.results.resultset import record_parts
from trtbench.scenarios.serving_result import ServedCase

JOURNAL_NAME = "journal.jsonl"


@dataclass
class JournalState:
    """What an earlier, unfinished run left: final records and the parts joined to them, saved artifacts,
    environments."""

    records: dict[str, Record] = field(default_factory=dict)  # case key -> record
    served: dict[str, ServedCase] = field(default_factory=dict)  # case key -> its serving results
    ceilings: dict[tuple, Ceiling] = field(default_factory=dict)  # Ceiling.scope -> the device's ceilings
    artifacts: dict[tuple, list[dict]] = field(default_factory=dict)  # (build key..., variant) -> manifest entries
    environments: dict[str, dict] = field(default_factory=dict)
    complete: bool = False  # the last run into this directory finished every case


class Journal:
    """Appends records and artifact entries to ``<out>/journal.jsonl``."""

    def __init__(self, out_dir: Path):
        self.path = Path(out_dir) / JOURNAL_NAME

    def _append(self, entry: dict) -> None:
        line = (json.dumps(entry, separators=(",", ":")) + "\n").encode()
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)

    def environment(self, env: dict) -> None:
        self._append({"kind": "environment", "environment": env})

    def record(self, record: Record) -> None:
        self._append({"kind": "record", "record": record.to_dict()})

    def served(self, served: ServedCase) -> None:
        self._append({"kind": "served", "served": served.to_dict()})

    def ceiling(self, ceiling: Ceiling) -> None:
        self._append({"kind": "ceiling", "ceiling": ceiling.to_dict()})

    def artifacts(self, key: tuple, entries: list[dict]) -> None:
        """The artifacts one variant build saved (possibly none): its save step is done."""
        self._append({"kind": "artifacts", "key": list(key), "entries": entries})

    def complete(self) -> None:
        """Every planned case is done: a later run starts anew instead of resuming."""
        self._append({"kind": "complete"})

    def discard(self) -> None:
        self.path.unlink(missing_ok=True)

    def read(self) -> JournalState:
        """Everything earlier runs completed; interrupted cases and torn lines are left out."""
        state = JournalState()
        if not self.path.is_file():
            return state
        for line in self.path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                entry = json.loads(line)
                kind = entry["kind"]
                if kind == "record":  # a journal of an earlier trtbench may hold parts in its records
                    record, ceiling, served = record_parts(entry["record"])
                    if record.status.final:
                        state.records[record.case.key] = record
                    if ceiling is not None:
                        state.ceilings.setdefault(ceiling.scope, ceiling)
                    if served is not None:
                        state.served[served.case_key] = served
                elif kind == "served":
                    served = ServedCase.from_dict(entry["served"])
                    state.served[served.case_key] = served
                elif kind == "ceiling":
                    ceiling = Ceiling.from_dict(entry["ceiling"])
                    state.ceilings[ceiling.scope] = ceiling
                elif kind == "artifacts":
                    state.artifacts[tuple(entry["key"])] = entry["entries"]
                elif kind == "environment":
                    state.environments[entry["environment"]["id"]] = entry["environment"]
                elif kind == "complete":
                    state = JournalState(complete=True)  # what came before is finished, not resumable
            except (json.JSONDecodeError, KeyError, TypeError, ValueError):
                continue  # a line torn by a crash: that case is measured again
        return state
