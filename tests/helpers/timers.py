"""A block timer (``trtbench.measure.timing.BlockTimer``) for tests of the timing loop's decisions."""

from __future__ import annotations

import itertools

from trtbench.measure.timing import Block


class ScriptedCost:
    """A block timer whose calls take the times it was given, in turn (one time: every call takes it): it reports
    them without running or sleeping, so what the timing loop decides from call times is exact, whatever the
    machine's load (a real sleep of 1 ms takes 1-4 ms on a busy machine)."""

    def __init__(self, *cycle_ms: float):
        self.ms = itertools.cycle(cycle_ms)
        self.calls = 0  # asked for, in all
        self.switch_ins = 0
        self.lead_ins = 0  # untimed calls before the timed ones, in all

    def block(self, calls: int, lead_in: int = 0) -> Block:
        self.calls += calls
        self.switch_ins += lead_in > 0
        self.lead_ins += lead_in
        return Block([next(self.ms) for _ in range(calls)])
