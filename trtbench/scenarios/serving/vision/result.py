"""What a serving scenario produced for one variant at one worker count, and a served case's results
(:class:`ServedCase`), joined to its record by case key."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import ClassVar, Optional

import numpy as np

from trtbench.core.codec import Coded, key
from trtbench.core.part import register_part
from trtbench.scenarios.serving.loadgen.summary import LoadGenSummary
from trtbench.scenarios.serving.loadgen.peaks import PeakEstimate, RepeatedPeaks
from trtbench.scenarios.serving.loadgen.rule import LEGACY_RULE
from trtbench.core.status import Status


@dataclass(frozen=True)
class LoadGenRun(Coded):
    """One LoadGen run at an offered QPS: LoadGen's summary and what the SUT saw."""

    offered_qps: float
    repeat: int  # which peak search (or run at the target) it belongs to
    summary: LoadGenSummary
    within_bound: bool  # valid by the scenario's rule (ServingConfig.validity)
    # per answered query, issue to completion at the SUT, in issue order
    latencies_ms: tuple[float, ...] = field(default=(), metadata=key(rounded=4))
    batches: dict[int, int] = field(default_factory=dict)  # calls per batch size, ascending
    lost: int = 0
    log_dir: str = ""  # relative to the run's output directory
    confirm: bool = False  # a joint estimate's confirming run at its interval's low end (LoadGen's verdict there)
    lost_at: tuple[int, ...] = ()  # where the lost queries were in issue order (counting every query issued)
    # per answered query, its call in the worker (send to result), in issue order
    service_ms: tuple[float, ...] = field(default=(), metadata=key(rounded=4))

    def late_flags(self, bound_ms: float) -> list[bool]:
        """Whether each query issued was late (over ``bound_ms``), in issue order; a lost query is late."""
        answered, lost = iter(self.latencies_ms), set(self.lost_at)
        return [True if i in lost else next(answered) > bound_ms for i in range(len(self.latencies_ms) + len(lost))]


@dataclass(frozen=True)
class ServingResult(RepeatedPeaks, Coded):
    """A variant served by ``workers`` processes x ``threads`` threads under one serving entry."""

    loadgen_scenario: str = field(metadata=key("scenario"))  # LoadGen's scenario (server), not a trtbench scenario
    workers: int
    threads: int
    bound_ms: float
    percentile: float  # the bound applies to this percentile (0.99: p99)
    peak_rule: str = LEGACY_RULE  # the rule a run passed by
    batching: Optional[dict] = None  # {max_batch, window_ms}
    status: Status = Status.OK  # failed: a query lost, a worker that failed
    reason: str = ""
    service_ms: Optional[float] = None  # one query's call in a worker, alone (the search's capacity estimate)
    peaks: tuple[float, ...] = ()
    runs: tuple[LoadGenRun, ...] = ()
    log_dir: str = ""  # relative to the run's output directory
    worker_facts: dict = field(default_factory=dict)  # what a worker reported: pid, threads, runtime threads, hosts
    interval: Optional[PeakEstimate] = None

    @property
    def peak_run(self) -> Optional[LoadGenRun]:
        """The run that stands for the peak (:meth:`median_peak_run`)."""
        return self.median_peak_run(self.runs, lambda r: r.within_bound, lambda r: r.summary.completed_qps or 0.0)

    @property
    def service_tail_ms(self) -> Optional[tuple[float, float, float]]:
        """The median, p99 and largest service time (ms) of every query answered; None without."""
        times = np.sort([ms for run in self.runs for ms in run.service_ms])
        if not len(times):
            return None
        return float(np.median(times)), float(times[math.ceil(0.99 * len(times)) - 1]), float(times[-1])

    @property
    def batch_histogram(self) -> dict[int, int]:
        """Calls per batch size over every run."""
        total: Counter[int] = Counter()
        for run in self.runs:
            total.update(run.batches)
        return dict(sorted(total.items()))

    @property
    def batching_text(self) -> str:
        """``off``, or ``<=4 in 2 ms``: up to 4 queries gathered within 2 ms."""
        return f"<={self.batching['max_batch']} in {self.batching['window_ms']:g} ms" if self.batching else "off"

    @property
    def label(self) -> str:
        """``w2 x t1`` (+ ``batching <=4 in 2 ms``): the serving configuration in a few words."""
        return f"w{self.workers} x t{self.threads}" + (f" batching {self.batching_text}" if self.batching else "")


@register_part
@dataclass(frozen=True)
class ServedCase(Coded):
    """What the serving scenarios gave one case (one variant at the served point) in one environment."""

    KIND: ClassVar[str] = "served"
    JOINS_RECORD: ClassVar[bool] = True  # one case's serving results, keyed as its record
    RESULTS_KEY: ClassVar[str] = "serving"

    case_key: str
    environment: str
    results: tuple[ServingResult, ...]  # per serving scenario and worker count

    @property
    def fails_run(self) -> bool:
        """A failed serving result (a worker that died, a query lost) makes the run exit 1."""
        return any(r.status is Status.FAILED for r in self.results)

    @property
    def failure_note(self) -> str:
        """What failed, for the report's notes: each failed serving result and why."""
        return "; ".join(f"served {r.label}: {r.status}: {r.reason}" for r in self.results if r.status is Status.FAILED)

    @property
    def key(self) -> tuple[str, str]:
        return (self.case_key, self.environment)
