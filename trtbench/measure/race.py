"""The race of one point's variants, pure over the blocks so far (docs/measuring.md, "Racing")."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Collection, Optional

from trtbench.analysis.race import PointCall, Standing, between_share, call_point
from trtbench.core.stats import BlockSeries, pooled_between_variance

RACE_MIN_CYCLES = 2  # rounds of each process before the race stops a variant or calls the point (docs/measuring.md)
CAPPED_MIN_ROUNDS = 3  # nor does the budget end a point before this many rounds in all: a paired CI needs three
DOMINATED = 0.5  # a contender whose interval is more than this share between-process spread gets a further process
STOPPED, DECIDED, BUDGET = "race", "decided", "budget_s"  # why a variant left a raced point (``stopped_by``)


@dataclass(frozen=True)
class Entrants:
    """The point's variants: ``baseline`` (never stopped), ``barred``, ``most`` processes, ``more``, ``start_s``, and
    ``references`` (a reduced row's fp32 row, timed on while that row races)."""

    baseline: Optional[str] = None
    barred: frozenset = frozenset()
    most: int = 1
    more: Callable[[str], object] = lambda variant: None
    start_s: Callable[[str], float] = lambda variant: 0.0
    references: dict = field(default_factory=dict)

    def timed_on(self, active: list[str], stopped: Collection[str]) -> set[str]:
        """The baseline, and the references of the active rows not stopped."""
        return {self.baseline} | {self.references[v] for v in active if v in self.references and v not in stopped}


@dataclass(frozen=True)
class Lap:
    """Where a point's rounds stand after a round: rounds, cycles, processes per variant, seconds spent, and whether
    the rounds are whole cycles."""

    rounds: int
    cycles: int
    processes: dict[str, int]
    spent_s: float
    cycle_end: bool = True


@dataclass(frozen=True)
class Demand:
    """A further process asked for ``variant`` after ``round``: ``share`` of its interval was between processes."""

    variant: str
    round: int
    share: float
    started: bool = True

    def to_dict(self) -> dict:
        return {"round": self.round, "between_share": round(self.share, 3), "started": self.started}


@dataclass(frozen=True)
class RaceStep:
    """What a round's end decides: the variants that stop, with why, and a further process wanted (or None)."""

    stops: dict[str, str]
    wants: Optional[Demand] = None


@dataclass
class Race:
    """One point's race over its variants' block series; :meth:`step` after each round."""

    margin: float
    budget_s: float
    entrants: Entrants = Entrants()
    stopped: dict[str, tuple[str, Standing]] = field(default_factory=dict)  # variant -> (leader, standing) then
    demands: list[Demand] = field(default_factory=list)
    ended: str = ""  # DECIDED or BUDGET once over
    call: Optional[PointCall] = None  # the latest call
    last_spent_s: float = 0.0  # the rounds' seconds at the previous round's end

    def contenders(self, active) -> list[str]:
        """The active variants that may still win: not out, not barred."""
        return [v for v in active if v not in self.stopped and v not in self.entrants.barred]

    def step(self, series: dict[str, BlockSeries], lap: Lap) -> RaceStep:
        """After a round: which of the active variants stop, and which contender gets a further process (the race's
        calls at a cycle's end; the budget's at any round's)."""
        active = list(lap.processes)
        round_s, self.last_spent_s = lap.spent_s - self.last_spent_s, lap.spent_s
        over = lap.spent_s + round_s / 2 >= self.budget_s and lap.rounds >= CAPPED_MIN_ROUNDS  # the nearest end
        if not (lap.cycle_end or over):
            return RaceStep({})
        contenders = self.contenders(active)
        if not contenders:  # none may win: timed to the budget
            self.ended = BUDGET if over else ""
            return RaceStep(dict.fromkeys(active, BUDGET) if over else {})
        if lap.cycles < RACE_MIN_CYCLES and not over:
            return RaceStep({})
        between = pooled_between_variance(series.values())
        call = self.call = call_point({v: series[v] for v in active}, contenders, self.margin, between)
        for standing in call.standings:
            if standing.variant in active and standing.variant not in self.stopped and standing.separated(self.margin):
                self.stopped[standing.variant] = (call.leader, standing)
        timed_on = self.entrants.timed_on(active, self.stopped)
        stops = {v: STOPPED for v in active if v in self.stopped and v not in timed_on}
        left = self.contenders(active)
        if len(left) <= 1 or call.equivalent(left) or over:
            self.ended = DECIDED if len(left) <= 1 or call.equivalent(left) else BUDGET
            return RaceStep({**stops, **{v: self.ended for v in active if v not in stops}})
        return RaceStep(stops, self._demand(series, call, left, lap, between))

    def _demand(self, series: dict[str, BlockSeries], call: PointCall, left: list[str], lap: Lap,
                between: Optional[float]) -> Optional[Demand]:
        """The undecided contender that a further process would help most (docs/measuring.md, "Racing"), or None."""
        undecided = [s for s in call.standings if s.variant in left and not s.within(self.margin)]
        if not undecided or lap.spent_s > self.budget_s / 2:
            return None
        asked = {d.variant for d in self.demands if not d.started}
        for variant in [call.leader, *[s.variant for s in undecided]]:
            counts = [series[variant].processes.count(p) for p in set(series[variant].processes)]
            if variant in asked or lap.processes[variant] >= self.entrants.most or min(counts) < RACE_MIN_CYCLES \
                    or lap.spent_s + 2 * self.entrants.start_s(variant) > self.budget_s:
                continue
            other = undecided[0].variant if variant == call.leader else call.leader
            share = between_share(series[variant], series[other], between)
            if share > DOMINATED:
                return Demand(variant, lap.rounds, share)
        return None

    def asked(self, demand: Demand, started: bool) -> None:
        """Keep what came of ``demand``: a variant whose process could not start is not asked for again."""
        self.demands.append(Demand(demand.variant, demand.round, demand.share, started))

    def outcomes(self, series: dict[str, BlockSeries]) -> dict[str, dict]:
        """Each variant's part in the race, for its record: outcome, how it ended, time behind, further processes."""
        names = [v for v in series if series[v].medians]
        left = self.contenders(names)
        if not left:
            return {}
        final = call_point({v: series[v] for v in names}, left, self.margin, pooled_between_variance(series.values()))
        behind = {s.variant: s.behind for s in final.standings}
        tied = {s.variant for s in final.tied(left)}
        timed_on = self.entrants.timed_on(names, self.stopped)  # to the end: the baseline, references of rows never out
        found = {}
        for v in names:
            entry = {"outcome": self._outcome(v, final.leader, tied), "ended": self.ended, "margin": self.margin,
                     "behind": behind[v].to_dict() if v in behind else None}
            if v in self.stopped:
                leader, standing = self.stopped[v]
                why = "out of the race" if v in timed_on else "stopped early"
                entry["text"] = f"{why}: slower than {leader} by >= {standing.behind.low - 1:.0%} (95%)"
            demands = [d.to_dict() for d in self.demands if d.variant == v]
            found[v] = {**entry, **({"processes": demands} if demands else {})}
        return found

    def _outcome(self, variant: str, leader: str, tied: set[str]) -> str:
        """``variant``'s outcome: winner, tie, stopped, out (the baseline, timed on), barred or behind."""
        if variant == leader:
            return "tie" if tied else "winner"
        if variant in tied:
            return "tie"
        if variant in self.stopped:
            return "out" if variant == self.entrants.baseline else "stopped"
        return "barred" if variant in self.entrants.barred else "behind"
