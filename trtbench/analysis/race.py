"""A point's race read from its blocks: its leader, each standing, its answer (docs/measuring.md, "Racing")."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from trtbench.core.record import Record
from trtbench.core.stats import BlockSeries, Interval, speedup_interval

RACE_MARGIN = 0.05  # a variant slower than the leader by more than this at 95% is out of the race
OUT = ("stopped", "out")  # the outcomes of a raced row that can no longer win (``metrics["race"]["outcome"]``)


@dataclass(frozen=True)
class Standing:
    """A variant's time over the leader's at a point (1.07: 7% slower), paired by round, with its 95% interval."""

    variant: str
    behind: Interval

    def separated(self, margin: float) -> bool:
        """Whether its interval says it is slower than the leader by more than ``margin``."""
        return self.behind.low > 1 + margin

    def within(self, margin: float) -> bool:
        """Whether its interval says it lies within ``margin`` of the leader, either way."""
        return 1 / (1 + margin) <= self.behind.low and self.behind.high <= 1 + margin


@dataclass(frozen=True)
class PointCall:
    """A point's call from its blocks so far: the leader and every other variant's standing, the closest first."""

    leader: str
    standings: tuple[Standing, ...]
    margin: float

    def tied(self, contenders: Sequence[str]) -> list[Standing]:
        """The standings of ``contenders`` not separated from the leader."""
        return [s for s in self.standings if s.variant in contenders and not s.separated(self.margin)]

    def equivalent(self, contenders: Sequence[str]) -> bool:
        """Whether every contender left lies within the margin of the leader at 95% (a tie, decided)."""
        return all(s.within(self.margin) for s in self.tied(contenders))


def call_point(series: dict[str, BlockSeries], contenders: Sequence[str], margin: float,
               between_var: Optional[float]) -> PointCall:
    """The call over ``series``: the contender of the lowest median leads; each variant sharing a round stands."""
    leader = min(contenders, key=lambda name: float(np.median(series[name].medians)))
    standings = [Standing(name, speedup_interval(one, series[leader], between_var)) for name, one in series.items()
                 if name != leader and set(one.rounds) & set(series[leader].rounds)]
    return PointCall(leader, tuple(sorted(standings, key=lambda s: s.behind.value)), margin)


def between_share(base: BlockSeries, this: BlockSeries, between_var: Optional[float]) -> float:
    """The share of the paired interval's squared log width that the spread between processes adds (0: not finite)."""
    full = speedup_interval(base, this, between_var)
    rounds = speedup_interval(base, this, between_var, resample_processes=False)
    widths = [math.log(i.high / i.low) if i.low > 0 and math.isfinite(i.high) else math.inf for i in (full, rounds)]
    if not all(math.isfinite(w) and w > 0 for w in widths):
        return 0.0
    return max(0.0, 1 - (widths[1] / widths[0]) ** 2)


@dataclass(frozen=True)
class PointAnswer:
    """A point's answer: the leader, those tied with it (none: it won), the runner-up, and ``at_budget``."""

    leader: Record
    tied: tuple[tuple[Record, Interval], ...]
    runner_up: Optional[tuple[Record, Interval]]
    at_budget: bool = False

    @property
    def within(self) -> float:
        """How far apart the tied variants may lie, by their intervals against the leader, either way."""
        return max((max(behind.high, 1 / behind.low) for _, behind in self.tied if behind.low > 0), default=1.0) - 1


def point_answer(records: Sequence[Record], between_var: Optional[float],
                 margin: float = RACE_MARGIN) -> Optional[PointAnswer]:
    """A point's answer from its rounds: the leader of the rows checked and not out of its race, and those tied."""
    race = {r.key: (r.metrics or {}).get("race") or {} for r in records}
    margin = next((part["margin"] for part in race.values() if "margin" in part), margin)
    contenders = [r.key for r in records if not r.accuracy_failed and race[r.key].get("outcome") not in OUT]
    if not contenders:
        return None
    by_key = {r.key: r for r in records}
    call = call_point({r.key: r.block_series for r in records}, contenders, margin, between_var)
    tied = call.tied(contenders)
    others = [(by_key[s.variant], s.behind) for s in call.standings
              if s not in tied and not by_key[s.variant].accuracy_failed]
    return PointAnswer(by_key[call.leader], tuple((by_key[s.variant], s.behind) for s in tied),
                       others[0] if others else None, race[call.leader].get("ended") == "budget_s")
