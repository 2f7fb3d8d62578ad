"""Interleaved rounds: the one loop in which latency and generate time a point's variants (docs/measuring.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class BlockAt:
    """Where a block falls: ``variant``'s replicate process ``process``, in the point's round ``round``."""

    variant: str
    process: int
    round: int


class Rounds:
    """The rounds of one point over ``processes`` (each variant's number of replicate processes), in their order."""

    def __init__(self, processes: dict[str, int]):
        self.processes, self.active = dict(processes), list(processes)
        self.cycle = max(processes.values(), default=1)
        self.rounds = 0  # rounds so far
        self.stopped_by: dict[str, str] = {}  # the variants stopped after a round, with why

    @property
    def cycles(self) -> int:
        """Whole cycles so far: rounds per process."""
        return self.rounds // self.cycle

    @property
    def at_cycle_end(self) -> bool:
        """Whether the rounds so far are whole cycles (every process of every variant took its turn)."""
        return self.rounds % self.cycle == 0

    def order(self) -> list[BlockAt]:
        """The next round's blocks: one per active variant, by process ``round mod P``, rotated per cycle."""
        units = [BlockAt(name, self.rounds % self.processes[name], self.rounds) for name in self.active]
        shift = self.cycles % len(units)
        return units[shift:] + units[:shift]

    def add_process(self, variant: str) -> None:
        """Give ``variant`` one more process, which takes its turns from the next round on."""
        self.processes[variant] += 1
        self.cycle = max(self.cycle, self.processes[variant])

    def leave(self, variant: str) -> None:
        """Take ``variant`` out of the rounds at once (one that failed: the round goes on without it)."""
        if variant in self.active:
            self.active.remove(variant)

    def run(self, block: Callable[[BlockAt], None], finished: Callable[["Rounds"], dict[str, str]],
            tick: Callable[[], None] = lambda: None) -> None:
        """Rounds until no variant is active; after each round ``finished`` says which stop, with why."""
        while self.active:
            for at in self.order():
                if at.variant in self.active:
                    block(at)
            self.rounds += 1
            tick()
            if not self.active:
                continue
            for name, why in finished(self).items():
                self.stopped_by[name] = why
                self.leave(name)
