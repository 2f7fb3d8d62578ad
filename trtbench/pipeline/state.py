"""What a run has done so far, each part journaled as it is kept, and what an earlier, unfinished run left."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from trtbench.results.journal import Journal, JournalState, save_key
from trtbench.config.plan import BuildGroup, RunPlan
from trtbench.core.record import Record
from trtbench.results.resultset import ResultSet
from trtbench.core.part import Part, PartsByKind
from trtbench.core.status import RunStatus, Status
from trtbench.models.identity import model_hash


@dataclass
class RunOutcome:
    """What a run produced and the exit code the CLI returns."""

    out_dir: Path
    results: ResultSet
    environment: dict
    interrupted: bool = False
    resumed: int = 0  # cases kept from an earlier, unfinished run
    files: dict = field(default_factory=dict)
    history: str = ""  # what appending to the history did (trtbench.pipeline.history), "" where it appends none

    @property
    def exit_code(self) -> int:
        return self.results.exit_code(self.interrupted)


class RunState:
    """The run's records by case key (in the order they came), its other parts, and its saves by save key."""

    def __init__(self, plan: RunPlan, journal: Journal):
        self.plan, self.journal = plan, journal
        self.records: dict[str, Record] = {}
        self.saved: dict[tuple, list[dict]] = {}
        self.kept = PartsByKind()  # every part but the records
        self.resumed = 0  # cases kept from an earlier, unfinished run
        self.run_id = uuid.uuid4().hex[:16]  # results.json's run and its records name it (the history's key)
        self.unfinished = False  # some planned case was not reached (Ctrl-C, a run-level error): resumable
        self.crashed: dict[tuple, str] = {}  # save key -> why its build, save or check crashed an earlier process

    def begin(self, environment: dict, fresh: bool) -> JournalState:
        """Start the journal of a run in ``environment``, resuming an earlier, unfinished one unless ``fresh``."""
        if fresh:
            self.journal.discard()
        earlier = self.journal.read()
        if earlier.complete:  # the last run finished: measure anew, in a new journal
            self.journal.discard()
        self.resume(earlier, environment["id"])
        self.run_id = earlier.run_id or self.run_id  # a resumed run is the same run
        self.journal.environment(environment)
        self.journal.run(self.run_id)
        self._fail_crashed()
        return earlier

    def resume(self, earlier: JournalState, env_id: str) -> None:
        """Keep the earlier run's final records of this environment's planned cases, whole points only."""
        for group in self.plan.groups:
            for point in group.points:
                keys = [group.case(entry, point, precision).key for entry, precision in group.slots()]
                found = [earlier.records.get(key) for key in keys]
                if all(r is not None and r.environment == env_id for r in found):
                    self.records.update(zip(keys, found))
                    self.resumed += len(keys)
        kept = {r.key for r in self.records.values()}
        for part in earlier.parts:  # a part that joins a record is kept with it; others by environment
            if part.environment == env_id and (part.key in kept or not part.JOINS_RECORD):
                self.kept.add(part)
        planned_saves = {save_key(g.model.id, p, e.name) for g in self.plan.groups for e, p in g.slots()}
        self.saved.update({k: v for k, v in earlier.artifacts.items()  # saved here, in this environment: a save
                           if k in planned_saves and earlier.saved_in.get(k) == env_id})  # elsewhere is redone
        self.crashed = dict(earlier.crashes)

    def _fail_crashed(self) -> None:
        """A variant that crashed an earlier run process is not tried again: its records fail, its save is done."""
        for group in self.plan.groups:
            for entry, precision in group.slots():
                key = save_key(group.model.id, precision, entry.name)
                if key not in self.crashed:
                    continue
                for record in self.variant_records(group, entry.name, precision):
                    if record.reason != self.crashed[key]:
                        self.keep(record.failed(self.crashed[key]))
                if key not in self.saved:
                    self.keep_saved(key, [])

    # ---- what stages return ------------------------------------------------------------------

    def keep(self, part: Part) -> None:
        """File ``part`` by its key and journal it (a record once it is final)."""
        if isinstance(part, Record):
            self.records[part.case.key] = part
            if not part.status.final:
                return
        else:
            self.kept.add(part)
        self.journal.part(part)

    @property
    def config(self):
        return self.plan.config

    def parts(self, kind: str) -> list[Part]:
        return self.kept.of(kind)

    def part(self, kind: str, key: tuple) -> Part | None:
        return self.kept.get(kind, key)

    def keep_saved(self, key: tuple, entries) -> None:
        """A variant's save is done (possibly publishing nothing): journal its manifest entries."""
        self.saved[key] = list(entries)
        self.journal.artifacts(key, self.saved[key])

    def end(self) -> None:
        """Close the journal: where nothing is left to resume, the next run of this command measures anew."""
        if not self.unfinished:
            self.journal.complete()

    def account_unfinished(self, env_id: str, status: Status, reason: str) -> None:
        """A record (not journaled) for every planned case not reached, where a listed scenario makes records."""
        self.unfinished = True
        if not any(Record in scenario.parts for scenario in self.plan.config.scenarios):
            return
        for case in self.plan.cases:
            if case.key not in self.records:
                self.records[case.key] = Record(case=case, environment=env_id, status=status, reason=reason)

    # ---- what is left of a build group -------------------------------------------------------

    def saves_todo(self, group: BuildGroup, precision: str) -> list[str]:
        """Variants at ``precision`` whose artifacts still need saving (the save step is journaled once done)."""
        if not self.config.output.save_artifacts:
            return []
        return [n for n in group.build_names_at(precision) if save_key(group.model.id, precision, n) not in self.saved
                and any(e.name == n for e in group.entries_at(precision))]

    def group_done(self, group: BuildGroup) -> bool:
        return (not any(s.owes(group, self) for s in self.plan.config.scenarios)
                and not any(self.saves_todo(group, p) for p in group.precisions))

    def variant_records(self, group: BuildGroup, name: str, precision: str) -> list[Record]:
        """The records of variant ``name`` at ``precision``, one per point it has one at."""
        entry = next(e for e in group.variants if e.name == name)
        keys = [group.case(entry, p, precision).key for p in group.points]
        return [self.records[k] for k in keys if k in self.records]

    # ---- the run's results -------------------------------------------------------------------

    def result_set(self, earlier: JournalState, environment: dict, started: datetime, ended: RunStatus) -> ResultSet:
        """Every planned case's record, in plan order whatever order they completed in, and this run's entry."""
        config = self.plan.config
        results = ResultSet(environments={**earlier.environments, environment["id"]: environment})
        results.runs.append({"run_id": self.run_id, "name": config.name, "label": config.output.label,
                             "models": {m.id: model_hash(m) for m in config.models},
                             "config": config.to_dict(), "environment": environment["id"],
                             "started_at": started.isoformat(timespec="seconds"),
                             "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                             "status": ended,
                             "shard": list(self.plan.shard) if self.plan.shard else None,
                             "resumed_cases": self.resumed})
        for case in self.plan.cases:
            if case.key in self.records:
                results.add(self.records[case.key].of_run(self.run_id))
        for part in self.kept:
            results.add(part)
        return results

    def saved_files(self, group: BuildGroup, precision: str, directory: Path) -> dict[str, list[Path]]:
        """The files saved of ``group``'s variants at ``precision``, by variant name."""
        return {name: [directory / e["file"] for e in entries] for (model_id, at, name), entries
                in self.saved.items() if model_id == group.model.id and at == precision}

    @property
    def saved_entries(self) -> list[dict]:
        """The manifest entries of every save, in the order the saves were kept."""
        return [entry for entries in self.saved.values() for entry in entries]

