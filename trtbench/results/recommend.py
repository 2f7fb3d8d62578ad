"""The p99-budget recommendation: the fastest-throughput point within the budget (docs/matrices.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from trtbench.analysis.race import PointAnswer
from trtbench.core.env import environment_name
from trtbench.core.record import Record
from trtbench.measure.race import STOPPED
from trtbench.results.resultset import ResultSet
from trtbench.results.successors import Successor, successors


def eligible(record: Record) -> bool:
    """Measured (ok, with samples and a throughput), checked against eager fp32 with a pass, not stopped by the race."""
    return (record.timed and record.throughput is not None and record.accuracy is not None
            and bool(record.accuracy.get("ok")) and record.stopped_by != STOPPED)


def _point(record: Record) -> dict:
    c, stats = record.case, record.stats
    return {"case_key": c.key, "variant": c.variant, "options": c.options, "precision": c.precision,
            "point": c.point, "batch": c.batch, "threads": c.threads, "device": c.device, "knobs": c.knobs,
            "median_ms": stats.median, "p99_ms": stats.p99, "throughput": record.throughput}


def _describe(record: Record) -> str:
    c, stats = record.case, record.stats
    knob = f", {c.knobs}" if c.knobs else ""
    return (f"{c.label} {c.precision}, batch {c.batch}, {c.threads} thread(s){knob}: "
            f"{record.throughput:.1f} samples/s, p99 {stats.p99:.3f} ms, median {stats.median:.3f} ms")


@dataclass(frozen=True)
class Recommendation:
    """The answer for one model in one environment."""

    environment: str
    model: str
    p99_budget_ms: float
    candidates: int  # eligible measured points considered
    choice: Optional[Record] = None  # the highest throughput within the budget
    closest: Optional[Record] = None  # when nothing fits: the eligible point with the lowest p99
    successors: tuple[Successor, ...] = ()  # where the choice is deprecated upstream: its successors at its point
    answer: Optional[PointAnswer] = None  # the answer at the choice's point: its race's winner or tie

    @property
    def instead(self) -> Optional[Successor]:
        """The fastest successor of a deprecated choice that is eligible, within the budget and as fast."""
        fit = [s for s in self.successors
               if s.as_fast and eligible(s.record) and s.record.stats.p99 <= self.p99_budget_ms]
        return max(fit, key=lambda s: s.speed.value, default=None)

    def _deprecation_text(self) -> str:
        """What the choice's deprecation weighs: the successor shipped instead, or what moving costs."""
        if not self.successors:
            return ""
        label, notes = self.choice.case.label, "; ".join(dict.fromkeys(s.deprecation.note for s in self.successors))
        instead = self.instead
        if instead is not None:
            return (f". {label} is deprecated ({notes}); its successor {instead.variant} at the same point is "
                    f"{instead.verdict()}, p99 {instead.record.stats.p99:.3f} ms: ship {instead.variant} instead")
        return (f". {label} is deprecated ({notes}); at the same point "
                + "; ".join(f"{s.variant}: {s.verdict()}" for s in self.successors))

    def _race_text(self) -> str:
        """What the race at the choice's point found: it won, by how much; it tied; or another was faster."""
        answer, choice = self.answer, self.choice
        if answer is None or answer.runner_up is None and not answer.tied:
            return ""
        if answer.tied and choice in (answer.leader, *[r for r, _ in answer.tied]):
            others = [r.case.label for r in (answer.leader, *[r for r, _ in answer.tied]) if r is not choice]
            return f"; at its point a tie with {', '.join(others)} (within {answer.within:.0%})"
        if answer.leader is choice:
            runner, lead = answer.runner_up
            return (f"; it won its point: {lead.value:.2f}x [{lead.low:.2f}-{lead.high:.2f}] the speed of "
                    f"{runner.case.label}")
        return f"; at its point {answer.leader.case.label} was faster"

    def text(self, environments: dict) -> str:
        """One line for the terminal and the report."""
        where = f"{environment_name(environments.get(self.environment, {'id': self.environment}))}, {self.model}"
        if self.choice is not None:
            return (f"{where}: {_describe(self.choice)} (the most throughput with p99 <= {self.p99_budget_ms:g} ms, "
                    f"of {self.candidates} measured point(s))" + self._race_text() + self._deprecation_text())
        if self.closest is not None:
            over = self.closest.stats.p99 / self.p99_budget_ms - 1
            return (f"{where}: NOTHING FITS p99 <= {self.p99_budget_ms:g} ms among {self.candidates} measured "
                    f"point(s); closest: {_describe(self.closest)} ({over:.0%} over the budget)")
        return (f"{where}: nothing to recommend: no point was measured ok with a passing accuracy check")

    def to_dict(self) -> dict:
        return {"environment": self.environment, "model": self.model, "p99_budget_ms": self.p99_budget_ms,
                "fits": self.choice is not None, "candidates": self.candidates,
                "choice": _point(self.choice) if self.choice is not None else None,
                "closest": _point(self.closest) if self.closest is not None else None,
                **({"successors": [s.to_dict() for s in self.successors],
                    "instead": _point(self.instead.record) if self.instead is not None else None}
                   if self.successors else {})}


def recommend(results: ResultSet, p99_budget_ms: float) -> list[Recommendation]:
    """One :class:`Recommendation` per (environment, model); ties in throughput go to the lower p99."""
    groups: dict[tuple[str, str], list[Record]] = {}
    for record in results:
        groups.setdefault((record.environment, record.case.model), []).append(record)
    out = []
    for (environment, model), records in groups.items():
        measured = [r for r in records if eligible(r)]
        fitting = [r for r in measured if r.stats.p99 <= p99_budget_ms]
        choice = max(fitting, key=lambda r: (r.throughput, -r.stats.p99), default=None)
        closest = None if fitting else min(measured, key=lambda r: r.stats.p99, default=None)
        after = tuple(successors(results, choice)) if choice is not None else ()
        answer = results.analysis.answer(choice) if choice is not None else None
        out.append(Recommendation(environment, model, p99_budget_ms, len(measured), choice, closest, after, answer))
    return out


def recommendation_markdown(recommendations: list[Recommendation], environments: dict) -> str:
    """The report's section: the budget, how points qualify, one bullet per environment and model."""
    budget = recommendations[0].p99_budget_ms
    lines = [f"## Recommendation: p99 <= {budget:g} ms", "",
             "The highest throughput (samples/s at the median latency) among measured points whose p99 host "
             "latency is within the budget; only points that ran ok and passed their accuracy check count (the "
             "accuracy floor: `tolerances`, i.e. atol/rtol against eager fp32 at fp32, fp16 and bf16, and at int8 the "
             "top-1 agreement and SQNR floors of `tolerances.int8`), and nothing is interpolated between measured "
             "batch sizes; a row the race stopped early (slower than its point's leader) does not count. A choice "
             "built with what upstream deprecates (TorchScript) gives way to its successor at the same point where "
             "that fits too and is within the interval of its speed (paired by round) or faster. Each choice says "
             "what the race at its point found.", ""]
    lines += [f"- {r.text(environments)}" for r in recommendations]
    return "\n".join(lines) + "\n"
