"""What a serving scenario produced for one variant at one worker count, and a served case's results
(:class:`ServedCase`), joined to its record by case key."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar, Optional

import numpy as np

from trtbench.core.part import register_part
from trtbench.scenarios.serving.loadgen.summary import LoadGenSummary
from trtbench.scenarios.serving.loadgen.peaks import PeakInterval, RepeatedPeaks
from trtbench.scenarios.serving.loadgen.rule import LEGACY_RULE
from trtbench.core.status import Status


@dataclass(frozen=True)
class LoadGenRun:
    """One LoadGen run at an offered QPS: LoadGen's summary and what the SUT saw."""

    offered_qps: float
    repeat: int  # which peak search (or run at the target) it belongs to
    summary: LoadGenSummary
    within_bound: bool  # valid by the scenario's rule (ServingConfig.validity)
    latencies_ms: tuple[float, ...] = ()  # per answered query, issue to completion at the SUT, in issue order
    batches: dict[int, int] = field(default_factory=dict)  # calls per batch size
    lost: int = 0
    log_dir: str = ""  # relative to the run's output directory
    confirm: bool = False  # a joint estimate's confirming run at its interval's low end (LoadGen's verdict there)
    lost_at: tuple[int, ...] = ()  # where the lost queries were in issue order (counting every query issued)
    service_ms: tuple[float, ...] = ()  # per answered query, its call in the worker (send to result), in issue order

    def late_flags(self, bound_ms: float) -> list[bool]:
        """Whether each query issued was late (over ``bound_ms``), in issue order; a lost query is late."""
        answered, lost = iter(self.latencies_ms), set(self.lost_at)
        return [True if i in lost else next(answered) > bound_ms for i in range(len(self.latencies_ms) + len(lost))]

    def to_dict(self) -> dict:
        return {"offered_qps": self.offered_qps, "repeat": self.repeat, "summary": self.summary.to_dict(),
                "within_bound": self.within_bound, "latencies_ms": [round(v, 4) for v in self.latencies_ms],
                "batches": {str(k): v for k, v in sorted(self.batches.items())}, "lost": self.lost,
                "log_dir": self.log_dir, "confirm": self.confirm, "lost_at": list(self.lost_at),
                "service_ms": [round(v, 4) for v in self.service_ms]}

    @classmethod
    def from_dict(cls, data: dict) -> "LoadGenRun":
        return cls(offered_qps=data["offered_qps"], repeat=data["repeat"],
                   summary=LoadGenSummary.from_dict(data["summary"]), within_bound=data["within_bound"],
                   latencies_ms=tuple(data.get("latencies_ms") or ()),
                   batches={int(k): v for k, v in (data.get("batches") or {}).items()}, lost=data.get("lost", 0),
                   log_dir=data.get("log_dir", ""), confirm=data.get("confirm", False),
                   lost_at=tuple(data.get("lost_at") or ()), service_ms=tuple(data.get("service_ms") or ()))


@dataclass(frozen=True)
class ServingResult(RepeatedPeaks):
    """A variant served by ``workers`` processes x ``threads`` threads under one serving entry."""

    loadgen_scenario: str  # LoadGen's scenario (server), not a trtbench scenario; "scenario" in JSON
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
    interval: Optional[PeakInterval] = None

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
        total: dict[int, int] = {}
        for run in self.runs:
            for size, calls in run.batches.items():
                total[size] = total.get(size, 0) + calls
        return dict(sorted(total.items()))

    @property
    def batching_text(self) -> str:
        """``off``, or ``<=4 in 2 ms``: up to 4 queries gathered within 2 ms."""
        return f"<={self.batching['max_batch']} in {self.batching['window_ms']:g} ms" if self.batching else "off"

    @property
    def label(self) -> str:
        """``w2 x t1`` (+ ``batching <=4 in 2 ms``): the serving configuration in a few words."""
        return f"w{self.workers} x t{self.threads}" + (f" batching {self.batching_text}" if self.batching else "")

    def to_dict(self) -> dict:
        return {"scenario": self.loadgen_scenario, "workers": self.workers, "threads": self.threads,
                "bound_ms": self.bound_ms, "percentile": self.percentile, "peak_rule": self.peak_rule,
                "batching": self.batching,
                "status": self.status, "reason": self.reason, "service_ms": self.service_ms,
                "peaks": list(self.peaks), "peak_qps": self.peak_qps, "runs": [r.to_dict() for r in self.runs],
                "log_dir": self.log_dir, "worker_facts": self.worker_facts,
                "interval": self.interval.to_dict() if self.interval is not None else None}

    @classmethod
    def from_dict(cls, data: dict) -> "ServingResult":
        return cls(loadgen_scenario=data["scenario"], workers=data["workers"], threads=data["threads"],
                   bound_ms=data["bound_ms"], percentile=data["percentile"],
                   peak_rule=data.get("peak_rule", LEGACY_RULE), batching=data.get("batching"),
                   status=Status(data.get("status", Status.OK)), reason=data.get("reason", ""),
                   service_ms=data.get("service_ms"), peaks=tuple(data.get("peaks") or ()),
                   runs=tuple(LoadGenRun.from_dict(r) for r in data.get("runs", [])),
                   log_dir=data.get("log_dir", ""), worker_facts=dict(data.get("worker_facts") or {}),
                   interval=PeakInterval.from_dict(data.get("interval"), data.get("peak_qps")))


@register_part
@dataclass(frozen=True)
class ServedCase:
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

    def to_dict(self) -> dict:
        return {"case_key": self.case_key, "environment": self.environment,
                "results": [r.to_dict() for r in self.results]}

    @classmethod
    def from_dict(cls, data: dict) -> "ServedCase":
        return cls(case_key=data["case_key"], environment=data["environment"],
                   results=tuple(ServingResult.from_dict(r) for r in data["results"]))
