"""The generate scenario's result part: one decoder at one precision at one point (prompt tokens x new tokens x
batch) of a build group, with its requests' metrics, its speedups over eager fp32 and its accuracy; and how a
point's requests become those figures."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from trtbench.core.stats import paired_ratio, relative_median_ci, summarize
from trtbench.core.status import Status
from trtbench.measure.token_timing import RequestMetrics, distribution, step_medians

TIMES = ("ttft_ms", "tpot_ms", "e2e_ms")  # the times with a speedup over eager fp32
RATES = ("decode_tokens_per_s", "prefill_tokens_per_s")


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
class GenerateRecord:
    """Decoder ``decoder`` at ``precision`` (slot ``slot`` of its build group) at point ``point``: ``data`` holds
    the point's settings, the per-request series (``requests``), their summaries (``metrics``), the speedups
    over eager fp32 (``speedups``), the accuracy against it (``accuracy``) and the worker's ``facts``."""

    KIND: ClassVar[str] = "generate"
    JOINS_RECORD: ClassVar[bool] = False
    RESULTS_KEY: ClassVar[str] = "generate"

    environment: str
    model: str
    threads: int
    point: str
    slot: str
    decoder: str
    precision: str
    status: Status
    reason: str = ""
    data: dict = field(default_factory=dict)

    @property
    def key(self) -> tuple:
        return (self.environment, self.model, self.threads, self.point, self.slot)

    @property
    def fails_run(self) -> bool:
        return self.status is Status.FAILED

    @property
    def failure_note(self) -> str:
        return f"generate {self.model} {self.point} {self.slot}: {self.reason}"

    def to_dict(self) -> dict:
        return {"environment": self.environment, "model": self.model, "threads": self.threads, "point": self.point,
                "slot": self.slot, "decoder": self.decoder, "precision": self.precision, "status": str(self.status),
                "reason": self.reason, "data": self.data}

    @classmethod
    def from_dict(cls, data: dict) -> "GenerateRecord":
        return cls(data["environment"], data["model"], data["threads"], data["point"], data["slot"], data["decoder"],
                   data["precision"], Status(data["status"]), data.get("reason", ""), data.get("data", {}))


def e2e_converged(requests: list[RequestMetrics], target_rel_ci: float) -> bool:
    """Whether the median E2E of ``requests`` is known to within ``target_rel_ci`` (its 95% interval's
    half-width over the median)."""
    return relative_median_ci([r.e2e_ms for r in requests]) <= target_rel_ci


def metrics_of(requests: list[RequestMetrics]) -> dict:
    """Each time's and rate's summary over ``requests`` (median, its interval, percentiles), the ITL
    distribution over every gap, and the median decode-step latency at each KV position."""
    metrics = {name: summarize([getattr(r, name) for r in requests]).to_dict() for name in TIMES + RATES}
    metrics["itl_ms"] = distribution([gap for r in requests for gap in r.itl_ms])
    metrics["step_ms"] = step_medians(requests)
    return metrics


def speedups_of(requests: list[RequestMetrics], baseline: list[RequestMetrics]) -> dict:
    """Eager fp32's median over this one's for TTFT, TPOT and E2E, each with a paired 95% interval: request i of
    both was made in round i, back to back."""
    speedups = {}
    for name in TIMES:
        interval = paired_ratio([[getattr(r, name)] for r in baseline], [[getattr(r, name)] for r in requests])
        speedups[name] = interval.to_dict() if interval is not None and np.isfinite(interval.low) else (
            {"value": interval.value, "low": None, "high": None} if interval is not None else None)
    return speedups


def requests_of(requests: list[RequestMetrics]) -> dict:
    """The per-request series the record keeps (ms), in the order made, with each request's block coordinates: the
    worker process that made it (``process``; one per decoder: 0) and the point's round it was made in (``round``),
    as a latency record's ``block_process`` and ``block_round`` give a block's (a request is the generate
    scenario's block)."""
    return {**{name: [round(getattr(r, name), 4) for r in requests] for name in TIMES},
            "process": [0] * len(requests), "round": list(range(len(requests)))}
