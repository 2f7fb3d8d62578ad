"""Crash-safe progress of a run: one JSON line per completed part, read back to resume (docs/resuming.md)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from trtbench.core.part import Part, PartsByKind, part_type
from trtbench.core.record import Record
from trtbench.results.resultset import record_parts

JOURNAL_NAME = "journal.jsonl"


def save_key(model: str, precision: str, variant: str) -> tuple:
    """How the journal and the manifest name one variant's save (its artifacts, its crash)."""
    return (model, precision, variant)


@dataclass
class JournalState:
    """What an earlier, unfinished run left: final records, other parts, saved artifacts, environments."""

    records: dict[str, Record] = field(default_factory=dict)  # case key -> record
    parts: PartsByKind = field(default_factory=PartsByKind)  # every other part
    artifacts: dict[tuple, list[dict]] = field(default_factory=dict)  # save key -> manifest entries
    saved_in: dict[tuple, str] = field(default_factory=dict)  # save key -> the environment of the run that saved
    environments: dict[str, dict] = field(default_factory=dict)
    crashes: dict[tuple, str] = field(default_factory=dict)  # save key -> why its build, save or check crashed
    run_id: str = ""  # the unfinished run's id: its resumption is the same run
    complete: bool = False  # the last run into this directory finished every case

    def keep(self, part: Part) -> None:
        if not isinstance(part, Record):
            self.parts.add(part)
        elif part.status.final:
            self.records[part.case.key] = part


class Journal:
    """Appends parts (records, and every other scenario's) and artifact entries to ``<out>/journal.jsonl``."""

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

    def run(self, run_id: str) -> None:
        """The run's id, which a resumption of it keeps."""
        self._append({"kind": "run", "run_id": run_id})

    def part(self, part: Part) -> None:
        """One line ``{"kind": KIND, KIND: part.to_dict()}``: a record, a ceiling, a served case..."""
        self._append({"kind": part.KIND, part.KIND: part.to_dict()})

    def artifacts(self, key: tuple, entries: list[dict]) -> None:
        """The artifacts one variant build saved (possibly none): its save step is done."""
        self._append({"kind": "artifacts", "key": list(key), "entries": entries})

    def crash(self, key: tuple, reason: str) -> None:
        """The build, save or check of the variant ``key`` names (as its save) crashed the run process: it fails."""
        self._append({"kind": "crash", "key": list(key), "reason": reason})

    def complete(self) -> None:
        """Every planned case is done: a later run starts anew instead of resuming."""
        self._append({"kind": "complete"})

    def discard(self) -> None:
        self.path.unlink(missing_ok=True)

    def read(self) -> JournalState:
        """Everything earlier runs completed; torn lines and lines of no registered kind left out."""
        state, environment = JournalState(), ""
        if not self.path.is_file():
            return state
        for line in self.path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                entry = json.loads(line)
                kind = entry["kind"]
                if kind == Record.KIND:  # a journal of an earlier trtbench may hold parts in its records
                    for part in record_parts(entry[kind]):
                        state.keep(part)
                elif kind == "artifacts":  # saved by the run whose environment line came last before it
                    state.artifacts[tuple(entry["key"])] = entry["entries"]
                    state.saved_in[tuple(entry["key"])] = environment
                elif kind == "crash":
                    state.crashes[tuple(entry["key"])] = entry["reason"]
                elif kind == "environment":
                    environment = entry["environment"]["id"]
                    state.environments[environment] = entry["environment"]
                elif kind == "run":
                    state.run_id = entry["run_id"]
                elif kind == "complete":
                    state = JournalState(complete=True)  # what came before is finished, not resumable
                elif part_type(kind) is not None:
                    state.keep(part_type(kind).from_dict(entry[kind]))
            except (json.JSONDecodeError, KeyError, TypeError, ValueError):
                continue  # a line torn by a crash: that case is measured again
        return state
