"""Did timing the variants together disturb them? (docs/measuring.md, "Interference check")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from trtbench.core.stats import summarize

MAX_MEDIAN_DIFF = 0.05


@dataclass(frozen=True)
class InterferenceCheck:
    """The baseline's median alone and in the rounds (ms, with 95% CI half-widths relative to each)."""

    alone_ms: float
    alone_ci_rel: float
    rounds_ms: float
    rounds_ci_rel: float
    variants: tuple[str, ...]  # the variants timed in the rounds

    @property
    def difference(self) -> float:
        """The rounds' median relative to the alone median, minus one."""
        return self.rounds_ms / self.alone_ms - 1

    @property
    def cis_overlap(self) -> bool:
        low_a, high_a = self.alone_ms * (1 - self.alone_ci_rel), self.alone_ms * (1 + self.alone_ci_rel)
        low_r, high_r = self.rounds_ms * (1 - self.rounds_ci_rel), self.rounds_ms * (1 + self.rounds_ci_rel)
        return low_a <= high_r and low_r <= high_a

    @property
    def disturbed(self) -> bool:
        """CIs that do not overlap, or a median more than 5% off where the alone run resolves 5% (its CI within 5%)."""
        return not self.cis_overlap or (self.alone_ci_rel <= MAX_MEDIAN_DIFF and abs(self.difference) > MAX_MEDIAN_DIFF)

    def text(self) -> str:
        return (f"baseline {self.rounds_ms:.3f} ms in the rounds with {', '.join(self.variants)} vs "
                f"{self.alone_ms:.3f} ms alone ({self.difference:+.1%}; 95% CIs "
                f"{'overlap' if self.cis_overlap else 'do not overlap'})")


def interference_check(record) -> Optional[InterferenceCheck]:
    """The check of a baseline record measured with others (None where there was none)."""
    data = record.metrics.get("interference")
    # against the first process's blocks alone: another process's own offset is no interference
    in_rounds = [s for block, p in zip(record.rounds, record.processes) if p == 0 for s in block]
    if not data or not data.get("alone_ms") or not in_rounds:
        return None
    alone, rounds = summarize(data["alone_ms"]), summarize(in_rounds)
    return InterferenceCheck(alone.median, alone.median_ci_rel, rounds.median, rounds.median_ci_rel,
                             tuple(data.get("variants") or ()))
