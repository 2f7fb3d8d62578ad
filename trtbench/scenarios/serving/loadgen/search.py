"""The peak search's bracket: bisection over the offered QPS, from [0, capacity], for the highest load whose run
passes (docs/serving.md, "Bisection")."""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Bracket:
    """The highest load that passed (``lo``), the lowest that failed (``hi``), and the steps run."""

    lo: float
    hi: float
    steps: int = 0

    @property
    def qps(self) -> float:
        """The load the next step offers."""
        return (self.lo + self.hi) / 2

    def after(self, passed: bool) -> "Bracket":
        """The bracket once a run at :attr:`qps` has passed, or failed."""
        qps = self.qps
        return replace(self, lo=qps if passed else self.lo, hi=self.hi if passed else qps, steps=self.steps + 1)

    def done(self, resolution: float, max_steps: int) -> bool:
        """Whether the peak (``lo``) is resolved to ``resolution`` of itself, or the steps are spent."""
        return self.steps >= max_steps or (self.lo > 0 and self.hi - self.lo <= resolution * self.lo)
