"""Does the race pick the same winners as a full run?

Run:  .venv/bin/python benchmarks/race_replay.py convert RESULTS.json [RESULTS.json ...] --out FIXTURE.json.gz
      .venv/bin/python benchmarks/race_replay.py replay FIXTURE.json.gz [...] [--budget-s S] [--margin M]

``convert`` reads saved full runs (``race: false``: every variant timed to its own precision target or the time cap)
and writes a compact fixture: per point, per variant, each block's median with its process and round and its cost
(the block's calls, its settle wait and switch-in call), in the order the run timed them, what a further process of
it costs to start (its processes' least ``ready_cpu_s``), whether the row passed its accuracy check, and the full
run's own answer (its leader, the rows it cannot separate from the leader by more than the margin, and each row's
interval against the leader: ``trtbench.analysis.race.point_answer``).

``replay`` feeds each point's blocks, in their recorded order, to the race's decision logic
(``trtbench.measure.race.Race``, the one the runs use): it starts each variant in the run's first two processes, adds
the run's next process of a variant where the race asks for one (paying its start from the budget), drops a
variant's later blocks once the race stops it, and spends the blocks' recorded cost against the budget; where the
run's blocks of a variant still in the race run out first, the point ends there as at its budget. At each point the
race agrees with the full run where it names the full run's leader as the winner, or calls a tie whose every variant
the full run's intervals do not separate from its leader either, the leader among them. Target: agreement at >= 95%
of points (docs/measuring.md, "Racing"). Nothing is timed: ``tests/measure/test_race_replay.py`` replays the fixtures
under ``tests/assets/race_replay/``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from trtbench.analysis.race import RACE_MARGIN, point_answer
from trtbench.core.record import Record
from trtbench.core.stats import BlockSeries
from trtbench.measure.race import CAPPED_MIN_ROUNDS, Entrants, Lap, Race
from trtbench.measure.timing import BUDGET_S
from trtbench.results.resultset import ResultSet

TARGET = 0.95  # of the points, the race agrees with the full run
START = 2  # processes a raced variant starts in


def _name(record: Record) -> str:
    return f"{record.case.label} {record.case.precision}"


def _blocks(record: Record) -> list[list[float]]:
    """Each block of ``record``: [median ms, process, round, cost ms (its calls, settle wait, switch-in call)]."""
    isolation = record.metrics.get("isolation") or {}
    extra = (isolation.get("settle_ms_median") or 0.0) + (isolation.get("switch_in_ms_median") or 0.0)
    return [[float(f"{np.median(calls):.5g}"), process, index, round(sum(calls) + extra, 3)]
            for calls, process, index in zip(record.rounds, record.processes, record.round_ids) if calls]


def fixture_of(results: ResultSet, source: str, margin: float = RACE_MARGIN) -> dict:
    """What the replay needs of a saved run: its points' blocks, and its own answer at each."""
    points = []
    for records, _ in results.analysis.points():
        if len(records) < 2:
            continue
        answer = point_answer(records, results.analysis.between_variance(records[0].environment), margin)
        if answer is None:
            continue
        case = records[0].case
        behind = {_name(r): [round(i.value, 4), round(i.low, 4), round(i.high, 4)]
                  for r, i in [*answer.tied, *([answer.runner_up] if answer.runner_up else [])]}
        baseline = results.baseline(records[0])
        points.append({"point": f"{case.model} {case.point} {case.shapes} t{case.threads} {records[0].environment}",
                       "baseline": _name(baseline) if baseline in records else None,
                       "variants": {_name(r): {"ok": not r.accuracy_failed, "blocks": _blocks(r), "start_s": min(
                           (p.get("ready_cpu_s") or 0.0 for p in r.metrics.get("processes") or []), default=0.0)}
                                    for r in records},
                       "full": {"leader": _name(answer.leader), "tied": [_name(r) for r, _ in answer.tied],
                                "behind": behind}})
    return {"source": source, "margin": margin, "points": points}


@dataclass(frozen=True)
class Replayed:
    """What the race called at a point: its ``members`` (the winner, or the variants tied, the leader first), how it
    ended, the rounds it ran and the cost it spent."""

    members: tuple[str, ...]
    ended: str
    rounds: int
    spent_s: float


def _series(blocks: list[list[float]]) -> BlockSeries:
    return BlockSeries(*(tuple(column) for column in zip(*[(b[0], int(b[1]), int(b[2])) for b in blocks]))) \
        if blocks else BlockSeries((), (), ())


def replay_point(point: dict, budget_s: float, margin: float = RACE_MARGIN) -> Replayed:
    """The race over ``point``'s recorded blocks, in their recorded order (see the module's docstring)."""
    variants = point["variants"]
    barred = frozenset(name for name, v in variants.items() if not v["ok"])
    start_s = {name: v.get("start_s", 0.0) for name, v in variants.items()}
    fp32 = {name: name.rsplit(" ", 1)[0] + " fp32" for name in variants}  # a reduced row's fp32 row, timed on
    references = {name: row for name, row in fp32.items() if row != name and row in variants}
    race = Race(margin, budget_s, Entrants(point["baseline"], barred, most=math.inf, start_s=start_s.get,
                                           references=references))
    allowed = {name: sorted({int(b[1]) for b in v["blocks"]})[:START] for name, v in variants.items()}
    kept: dict[str, list] = {name: [] for name in variants}
    active = list(variants)
    by_round: dict[int, dict[str, list]] = {}
    for name, v in variants.items():
        for block in v["blocks"]:
            by_round.setdefault(int(block[2]), {})[name] = block
    rounds, spent = 0, 0.0
    last = {name: max((int(b[2]) for b in v["blocks"]), default=-1) for name, v in variants.items()}
    for index in sorted(by_round):
        if any(last[name] < index for name in active):  # the run's blocks of one in the race ran out
            break
        timed = [(name, block) for name, block in by_round[index].items()
                 if name in active and int(block[1]) in allowed[name]]
        if not timed:
            continue
        for name, block in timed:
            kept[name].append(block)
            spent += block[3] / 1e3
        rounds += 1
        cycle = max(len(allowed[name]) for name in active)
        step = race.step({n: _series(kept[n]) for n in variants if kept[n]},
                         Lap(rounds, rounds // cycle, {n: len(allowed[n]) for n in active}, spent,
                             cycle_end=rounds % cycle == 0))
        if step.wants is not None:
            wanted = step.wants.variant
            more = sorted({int(b[1]) for b in variants[wanted]["blocks"]} - set(allowed[wanted]))
            race.asked(step.wants, started=bool(more))
            allowed[wanted] += more[:1]
            spent += start_s[wanted] if more else 0.0  # its start, paid from the budget
        active = [name for name in active if name not in step.stops]
        if not active:
            break
    ran_out = bool(active)
    if ran_out and rounds >= CAPPED_MIN_ROUNDS:  # ended as at the budget
        race.step({n: _series(kept[n]) for n in variants if kept[n]},
                  Lap(rounds, rounds // START, {n: len(allowed[n]) for n in active}, math.inf))
    outcomes = race.outcomes({n: _series(kept[n]) for n in variants if kept[n]})
    members = sorted((n for n, part in outcomes.items() if part["outcome"] in ("winner", "tie")),
                     key=lambda n: outcomes[n]["behind"] is not None)
    return Replayed(tuple(members), "blocks ran out" if ran_out else race.ended, rounds, spent)


def agrees(replayed: Replayed, full: dict) -> bool:
    """Whether the race named the full run's leader as its winner, or called a tie its intervals show too."""
    if len(replayed.members) == 1:
        return replayed.members[0] == full["leader"]
    return full["leader"] in replayed.members and set(replayed.members) <= {full["leader"], *full["tied"]}


def replay(fixtures: list[dict], budget_s: float, margin: float = RACE_MARGIN) -> list[tuple[dict, Replayed, bool]]:
    """Every point of ``fixtures`` replayed: the point, what the race called, and whether it agrees."""
    found = []
    for fixture in fixtures:
        for point in fixture["points"]:
            replayed = replay_point(point, budget_s, margin)
            found.append((point, replayed, agrees(replayed, point["full"])))
    return found


def load_fixture(path: Path) -> dict:
    with gzip.open(path, "rt", encoding="utf-8") as file:
        return json.load(file)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    convert = sub.add_parser("convert", help="saved results.json files -> one gzip'd JSON fixture")
    convert.add_argument("results", nargs="+", type=Path)
    convert.add_argument("--out", type=Path, required=True)
    play = sub.add_parser("replay", help="replay fixtures through the race; print the agreement")
    play.add_argument("fixtures", nargs="+", type=Path)
    play.add_argument("--budget-s", type=float, default=BUDGET_S)
    play.add_argument("--margin", type=float, default=RACE_MARGIN)
    args = parser.parse_args(argv)
    if args.command == "convert":
        runs = [fixture_of(ResultSet.load(path), str(path)) for path in args.results]
        with gzip.open(args.out, "wt", encoding="utf-8") as file:
            json.dump({"runs": runs}, file, separators=(",", ":"))
        print(f"{args.out}: {sum(len(run['points']) for run in runs)} point(s) of {len(runs)} run(s), "
              f"{args.out.stat().st_size / 1024:.0f} KiB")
        return 0
    fixtures = [run for path in args.fixtures for run in load_fixture(path)["runs"]]
    found = replay(fixtures, args.budget_s, args.margin)
    for point, replayed, agree in found:
        full = point["full"]
        print(f"{'agree   ' if agree else 'DISAGREE'} {point['point']}: race {' = '.join(replayed.members)} "
              f"({replayed.ended}, {replayed.rounds} rounds, {replayed.spent_s:.1f} s); full run "
              f"{' = '.join([full['leader'], *full['tied']])}")
    share = sum(agree for *_, agree in found) / len(found) if found else 0.0
    print(f"agreement: {share:.1%} of {len(found)} point(s) (target >= {TARGET:.0%}), budget {args.budget_s:g} s")
    return 0 if share >= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
