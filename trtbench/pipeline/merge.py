"""``trtbench merge``: several runs (shards, machines) in one report (more: docs/matrices.md, "Module notes")."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from trtbench.core.env import environment_name
from trtbench.core.errors import UserInputError
from trtbench.results.journal import JOURNAL_NAME, Journal
from trtbench.core.record import Record
from trtbench.pipeline.history import append_history, check_history, history_for
from trtbench.pipeline.sections import report_sections
from trtbench.scenarios import registered
from trtbench.report.blocks import Block, Heading, Item, Items, Paragraph, code
from trtbench.report.writer import ReportHead, write_report
from trtbench.results.resultset import ResultSet
from trtbench.core.status import RunStatus


@dataclass
class MergeOutcome:
    """The merged set, what was reported about it, and the files written."""

    out_dir: Path
    results: ResultSet
    notes: list[str]
    p99_budget_ms: Optional[float]
    files: dict = field(default_factory=dict)
    history: str = ""  # what appending to the history did, "" where it appends none

    @property
    def exit_code(self) -> int:
        """1 when something was reported or a case failed, else 0."""
        return 1 if self.notes else self.results.exit_code()


def load_inputs(dirs: list[str]) -> tuple[list[ResultSet], list[str]]:
    """Each input's results (an empty set where it has no results.json, so each keeps its number), and its notes."""
    sets, notes = [], []
    for i, text in enumerate(dirs):
        path = Path(text)
        if path.is_file() or (path / "results.json").is_file():
            sets.append(ResultSet.load(path))
        else:
            sets.append(ResultSet())
            notes.append(missing_note(i + 1, path))
    if not any(results.runs for results in sets) and not any((Path(d) / JOURNAL_NAME).is_file() for d in dirs):
        raise UserInputError(dirs[0], f"none of the {len(dirs)} input(s) holds a trtbench run (a results.json or "
                                      f"a {JOURNAL_NAME}): {'; '.join(notes)}",
                             "pass the output directories of trtbench runs (each holds a results.json)")
    return sets, notes


def missing_note(number: int, path: Path) -> str:
    """Why input ``number`` has no results, and the cases its journal holds."""
    where = f"input {number} ({path}) has no results.json"
    if not path.exists():
        return (f"input {number} ({path}) does not exist: its run never started (a task cancelled or never "
                f"scheduled), or the path is wrong; its cases are missing from this merge")
    journal = Journal(path)
    if not journal.path.is_file():
        return (f"{where} and no {JOURNAL_NAME}: its run never started there, or the path is wrong; its cases "
                f"are missing from this merge")
    state = journal.read()
    if state.complete:
        return (f"{where}, though its journal says its run finished: results.json was removed; run the same "
                f"command again (it measures anew), then merge again")
    cases = [f"{_describe(_comparable(r))} t{r.case.threads} {r.status}" for r in state.records.values()]
    held = (f"its journal holds {len(cases)} finished case(s): {'; '.join(cases)}" if cases
            else "its journal holds no finished case")
    return (f"{where}: its run did not finish (killed, cancelled, out of time, or still running), so none of "
            f"its cases are in this merge; {held}. Run the same command again to resume it (it keeps those "
            f"cases), then merge again")


def _where(results: ResultSet, env: str) -> str:
    return environment_name(results.environments.get(env, {"id": env}))


def _describe(comparable: tuple) -> str:
    return "{} {} {} {} ({})".format(*comparable)  # model, label, precision, point (shapes)


def _comparable(record: Record) -> tuple:
    c = record.case
    return (c.model, c.label, c.precision, c.point, c.shapes)


def coverage_notes(results: ResultSet) -> list[str]:
    """One note per environment that lacks cases another environment measured."""
    by_env: dict[str, Counter] = {}
    for record in results:
        by_env.setdefault(record.environment, Counter())[_comparable(record)] += 1
    if len(by_env) < 2:
        return []
    most = Counter()
    for counts in by_env.values():
        most |= counts
    notes = []
    for env, counts in by_env.items():
        missing = [(key, counts[key], n) for key, n in sorted(most.items()) if counts[key] < n]
        if missing:
            notes.append(f"{len(missing)} case(s) measured elsewhere but not on {_where(results, env)}: " + "; ".join(
                _describe(key) + (f" (at {have} of {n} thread counts)" if have else "") for key, have, n in missing))
    return notes


def shard_notes(runs: list[dict]) -> list[str]:
    """Shards of a sharded run that are missing from the inputs, or given more than once."""
    shards: dict[tuple, Counter] = {}
    for run in runs:
        if run.get("shard"):
            index, count = run["shard"]
            shards.setdefault((run.get("name"), count), Counter())[index] += 1
    notes = []
    for (name, count), seen in shards.items():
        missing = [f"{i}/{count}" for i in range(count) if i not in seen]
        twice = [f"{i}/{count}" for i, n in sorted(seen.items()) if n > 1]
        if missing:
            notes.append(f"run '{name}' was sharded {count} ways; shard(s) {', '.join(missing)} are not among the "
                         f"inputs, so their cases are missing from this merge")
        if twice:
            notes.append(f"run '{name}': shard(s) {', '.join(twice)} given more than once")
    return notes


def interrupted_notes(dirs: list[str], sets: list[ResultSet]) -> list[str]:
    return [f"input {i + 1} ({d}): run '{run.get('name')}' was interrupted; its unfinished cases are marked "
            f"interrupted (run it again to resume, then merge again)"
            for i, (d, results) in enumerate(zip(dirs, sets)) for run in results.runs
            if run.get("status") == RunStatus.INTERRUPTED]


def budget_of(sets: list[ResultSet], given: Optional[float]) -> Optional[float]:
    """``--p99-budget`` if given, else the budget every input's config names (when they agree)."""
    if given is not None:
        return given
    budgets = {(run.get("config") or {}).get("budget", {}).get("p99_ms") for s in sets for run in s.runs} - {None}
    if len(budgets) > 1:
        raise UserInputError("--p99-budget", f"the inputs' configs name different budgets: "
                             f"{', '.join(f'{b:g} ms' for b in sorted(budgets))}",
                             "pass --p99-budget MS to choose the one the merged report recommends for")
    return budgets.pop() if budgets else None


def merge_intro(out_dir: Path, dirs: list[str], sets: list[ResultSet], notes: list[str]) -> list[Block]:
    """The merged report's title, its inputs (numbered as the notes name them) and the notes."""
    inputs = []
    for i, (d, results) in enumerate(zip(dirs, sets)):
        if not results.runs:
            inputs.append(Item((code(d), ": no results.json (see the merge notes)"), i + 1))
        for run in results.runs:
            shard = f", shard {run['shard'][0]}/{run['shard'][1]}" if run.get("shard") else ""
            mode = ((run.get("config") or {}).get("benchmark") or {}).get("mode", "?")
            inputs.append(Item((code(d), f": run '{run.get('name')}'{shard}, {run.get('status')}, timing {mode}, on "
                                f"{_where(results, run.get('environment'))}, started {run.get('started_at')}"), i + 1))
    blocks = [Heading(1, f"trtbench merge: {out_dir.name}"),
              Paragraph((f"{len(dirs)} run output(s) merged with ", code("trtbench merge"), "; each record keeps the "
                         "raw samples it was measured with. Speedup is over eager at the same point in the same "
                         "environment, paired by the rounds both were timed in (the median of eager's block over the "
                         "variant's). Inputs:")), Items(tuple(inputs))]
    if notes:
        blocks += [Heading(2, "Merge notes"), Items(tuple(Item((note,)) for note in notes))]
    return blocks


def merge_runs(dirs: list[str], out_dir: str | Path, p99_budget_ms: Optional[float] = None,
               history: Optional[str] = None) -> MergeOutcome:
    """Merge the runs in ``dirs`` into ``out_dir`` and append them to ``history`` ("" none, None the default)."""
    out_dir = Path(out_dir)
    sets, missing = load_inputs(dirs)
    for i, d in enumerate(dirs):
        if out_dir.resolve() == Path(d).resolve():
            raise UserInputError("--output", f"'{out_dir}' is input {i + 1}", "write the merge to a new directory")
    if (out_dir / JOURNAL_NAME).exists():
        raise UserInputError("--output", f"'{out_dir}' holds a run ({JOURNAL_NAME})",
                             "write the merge to a new directory; a run's own results stay as they are")
    for scenario in registered():
        scenario.check_merge(sets, [f"input {i + 1} ({d})" for i, d in enumerate(dirs)])
    where = history_for(history, out_dir)
    check_history(where)
    budget = budget_of(sets, p99_budget_ms)
    merged, notes = ResultSet.merge(sets)
    notes = missing + notes + shard_notes(merged.runs) + coverage_notes(merged) + interrupted_notes(dirs, sets)
    head = ReportHead(merge_intro(out_dir, dirs, sets, notes))
    files = write_report(out_dir, merged, head, report_sections(merged, budget), key="--output")
    return MergeOutcome(out_dir, merged, notes, budget, files, append_history(where, merged, out_dir))
