"""The generate scenario's result part, one decoder at one precision at one point of a build group, and how a
point's requests become its figures."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from trtbench.core.codec import Coded
from trtbench.core.stats import BlockSeries, median_interval, pooled_between_variance, speedup_interval, summarize
from trtbench.core.status import Status
from trtbench.measure.token_timing import RequestMetrics, distribution, step_medians

TIMES = ("ttft_ms", "tpot_ms", "e2e_ms")  # the times with a speedup over eager fp32
RATES = ("decode_tokens_per_s", "prefill_tokens_per_s")


@dataclass(frozen=True)
class Slot:
    """One decoder at one precision in a build group: its slot id, the decoder's name and the precision."""

    id: str
    decoder: str
    precision: str


@dataclass(frozen=True)
class GeneratePoint:
    """A point of the generate scenario: ``batch`` sequences of ``prompt_tokens`` ids, ``new_tokens`` each."""

    prompt_tokens: int
    new_tokens: int
    batch: int

    @property
    def label(self) -> str:
        return f"p{self.prompt_tokens}-n{self.new_tokens}-b{self.batch}"


@dataclass(frozen=True)
class DecoderPoint:
    """Where a decoder's result part belongs: its key, shared by its generate row and its serving."""

    environment: str
    model: str
    threads: int
    point: str
    slot: str
    decoder: str
    precision: str

    @property
    def key(self) -> tuple:
        return (self.environment, self.model, self.threads, self.point, self.slot)


@dataclass(frozen=True)
class GenerateRecord(DecoderPoint, Coded):
    """A decoder at one point: ``data`` holds the point's settings, the per-request series (``requests``), their
    summaries (``metrics``), the ``speedups`` over eager fp32, the ``accuracy`` and the worker's ``facts``."""

    KIND: ClassVar[str] = "generate"
    JOINS_RECORD: ClassVar[bool] = False
    RESULTS_KEY: ClassVar[str] = "generate"

    status: Status
    reason: str = ""
    data: dict = field(default_factory=dict)

    @property
    def fails_run(self) -> bool:
        return self.status is Status.FAILED

    @property
    def failure_note(self) -> str:
        return f"generate {self.model} {self.point} {self.slot}: {self.reason}"


@dataclass(frozen=True)
class RequestSeries:
    """A decoder's requests at one point, in the order made, with each one's block: (replicate process, round)."""

    requests: list[RequestMetrics]
    blocks: list[tuple[int, int]]

    def series(self, name: str) -> BlockSeries:
        """Metric ``name`` of the requests as blocks, each with its replicate process and global round."""
        return BlockSeries(tuple(getattr(r, name) for r in self.requests), tuple(p for p, _ in self.blocks),
                           tuple(r for _, r in self.blocks))


def pooled_variances(rows: list[RequestSeries]) -> dict:
    """Per time, the between-process variance (log scale) pooled over ``rows``, None where no row has 2 processes."""
    return {name: pooled_between_variance([row.series(name) for row in rows]) for name in TIMES + RATES}


def e2e_converged(row: RequestSeries, target_rel_ci: float) -> bool:
    """Whether the two-level 95% interval of the median E2E of ``row`` is within ``target_rel_ci`` of it."""
    return median_interval(row.series("e2e_ms")).rel_halfwidth <= target_rel_ci


def metrics_of(row: RequestSeries, between: dict) -> dict:
    """Each time's and rate's summary over ``row``'s requests, the ITL distribution and each step's median."""
    metrics = {}
    for name in TIMES + RATES:
        metrics[name] = summarize([getattr(r, name) for r in row.requests]).to_dict()
        metrics[name]["median_ci_rel"] = median_interval(row.series(name), between.get(name)).rel_halfwidth
    metrics["itl_ms"] = distribution([gap for r in row.requests for gap in r.itl_ms])
    metrics["step_ms"] = step_medians(row.requests)
    return metrics


def speedups_of(row: RequestSeries, baseline: RequestSeries, between: dict) -> dict:
    """The speedup over eager fp32 for TTFT, TPOT and E2E, paired by round, with its two-level 95% interval."""
    speedups = {}
    for name in TIMES:
        base, this = baseline.series(name), row.series(name)
        if base == this:  # eager fp32's own row: its reference, 1 exactly
            speedups[name] = {"value": 1.0, "low": 1.0, "high": 1.0}
            continue
        interval = speedup_interval(base, this, between.get(name))
        speedups[name] = (interval.to_dict() if np.isfinite(interval.low) and np.isfinite(interval.high)
                          else {"value": interval.value, "low": None, "high": None})
    return speedups


def requests_of(row: RequestSeries) -> dict:
    """The per-request series the record keeps (ms), with each request's ``process`` and ``round``."""
    return {**{name: [round(getattr(r, name), 4) for r in row.requests] for name in TIMES},
            "process": [p for p, _ in row.blocks], "round": [r for _, r in row.blocks]}


def process_count(data: dict) -> int:
    """How many replicate processes a record's requests came from: 1 for a record written before they were kept."""
    return data.get("processes") or len(set(data.get("requests", {}).get("process", [0]))) or 1


def requests_per_process(data: dict) -> int:
    """How many requests each replicate process of a record made (its rounds, for a record of one process)."""
    made = data.get("requests", {}).get("e2e_ms")
    return len(made) // process_count(data) if made else data["rounds"]
