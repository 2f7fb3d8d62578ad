"""What LLM serving produced: one LoadGen run with token latencies (:class:`DecoderStep`), a decoder served under one
entry (:class:`DecoderServingResult`), and a slot's results at one point (:class:`ServedDecoder`, a part)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Optional

from trtbench.core import schema
from trtbench.core.codec import Coded, key
from trtbench.core.part import register_part
from trtbench.core.status import Status
from trtbench.scenarios.serving.loadgen.summary import LoadGenSummary
from trtbench.scenarios.serving.loadgen.peaks import PeakEstimate, RepeatedPeaks
from trtbench.scenarios.generate import DecoderPoint
from trtbench.scenarios.serving.tokens.lengths import QueryLengths
from trtbench.scenarios.serving.tokens.run import nearest_rank

ROUNDING = 4  # decimals kept of a query's ms


@dataclass(frozen=True)
class DecoderStep(Coded):
    """One LoadGen run at ``offered_qps``; ``error``: why a worker failed during it."""

    offered_qps: float
    repeat: int  # which peak search (or run at the fixed qps) it belongs to
    summary: LoadGenSummary
    passed: bool
    late: int
    ttft_ms: tuple[float, ...] = field(default=(), metadata=key(rounded=ROUNDING))
    tpot_ms: tuple[float, ...] = field(default=(), metadata=key(rounded=ROUNDING))
    itl_ms: dict[str, float] = field(default_factory=dict)  # p50, p90, p99
    request_per_s: float = 0.0
    output_tokens_per_s: float = 0.0
    error: str = ""
    log_dir: str = ""  # relative to the run's output directory
    batches: dict[int, int] = field(default_factory=dict)  # the requests its workers ran per batch size
    most_in_flight: int = 0  # the most queries generating at once, from their stamps (DecoderRun.most_in_flight)
    confirm: bool = False  # a joint estimate's confirming run at its interval's low end (LoadGen's verdict there)

    @property
    def queries(self) -> int:
        return len(self.ttft_ms)

    @property
    def goodput(self) -> float:
        """The share of queries within both bounds."""
        return 1 - self.late / self.queries if self.queries else 0.0

    def late_flags(self, ttft_bound_ms: float, tpot_bound_ms: float) -> list[bool]:
        """Whether each answered query was late (its TTFT or TPOT over its bound), in the order kept."""
        return [ttft > ttft_bound_ms or tpot > tpot_bound_ms for ttft, tpot in zip(self.ttft_ms, self.tpot_ms)]

    def percentile_ms(self, metric: str, percentile: float) -> Optional[float]:
        """The ``percentile`` of ``ttft`` or ``tpot`` by nearest rank; None without queries."""
        values = self.ttft_ms if metric == "ttft" else self.tpot_ms
        return nearest_rank(values, percentile * 100) if values else None


@dataclass(frozen=True)
class DecoderServingResult(RepeatedPeaks, Coded):
    """A decoder served at one point by ``workers`` processes under serving entry ``entry``."""

    entry: int
    workers: int
    threads: int
    ttft_bound_ms: float
    tpot_bound_ms: float
    percentile: float
    peak_rule: str
    status: Status = Status.OK
    reason: str = ""
    service: dict = field(default_factory=dict)  # ttft_ms, tpot_ms, e2e_ms
    capacity_qps: Optional[float] = None
    peaks: tuple[float, ...] = ()
    steps: tuple[DecoderStep, ...] = ()
    log_dir: str = ""  # relative to the run's output directory
    batching: Optional[dict] = None  # mode, max_batch and a static batch's window_ms; None: one query at a time
    lengths: dict = field(default_factory=dict)
    interval: Optional[PeakEstimate] = None  # a joint estimate's (its one peak's); None for a bisection's

    @property
    def bounds_text(self) -> str:
        """``p99 TTFT <= 2000 ms, TPOT <= 200 ms``."""
        return f"{self.percentile_key} TTFT <= {self.ttft_bound_ms:g} ms, TPOT <= {self.tpot_bound_ms:g} ms"

    @property
    def label(self) -> str:
        return f"w{self.workers} x t{self.threads}"

    @property
    def lengths_text(self) -> str:
        """What its queries asked for (:attr:`~trtbench.scenarios.serving.tokens.lengths.QueryLengths.text`)."""
        return schema.from_dict(QueryLengths, self.lengths, "lengths").text if self.lengths else ""

    @property
    def batching_text(self) -> str:
        """``static, up to 2 in 5 ms``, ``continuous, up to 4`` or ``1 at a time``."""
        if self.batching is None:
            return "1 at a time"
        if self.batching.get("mode") == "continuous":
            return f"continuous, up to {self.batching['max_batch']}"
        return f"static, up to {self.batching['max_batch']} in {self.batching['window_ms']:g} ms"

    @property
    def peak_step(self) -> Optional[DecoderStep]:
        """The step that stands for the peak (:meth:`median_peak_run`)."""
        return self.median_peak_run(self.steps, lambda s: s.passed, lambda s: s.request_per_s)


@register_part
@dataclass(frozen=True)
class ServedDecoder(DecoderPoint, Coded):
    """What the serving entries beside generate gave one decoder slot at one generate point in one environment."""

    KIND: ClassVar[str] = "served_decoder"
    JOINS_RECORD: ClassVar[bool] = False
    RESULTS_KEY: ClassVar[str] = "decoder_serving"

    results: tuple[DecoderServingResult, ...]

    @property
    def fails_run(self) -> bool:
        """A failed result (a worker that died, a request past its timeout) makes the run exit 1."""
        return any(r.status is Status.FAILED for r in self.results)

    @property
    def failure_note(self) -> str:
        return "; ".join(f"served {self.model} {self.point} {self.slot} {r.label}: {r.status}: {r.reason}"
                         for r in self.results if r.status is Status.FAILED)
