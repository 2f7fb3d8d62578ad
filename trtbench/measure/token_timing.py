"""How a generation request is timed (a stamp per step), and every token metric from those stamps alone."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Optional

import numpy as np

DEFINITIONS = {
    "TTFT": "time to first token: from the request to the first token (prefill plus the first sample)",
    "TPOT": "time per output token: (E2E - TTFT) / (new_tokens - 1), per request",
    "ITL": "inter-token latency: each gap between consecutive tokens of a request, as a distribution",
    "decode tok/s": "batch x (new_tokens - 1) / (E2E - TTFT): every sequence of the batch counts",
    "prefill tok/s": "batch x prompt_tokens / TTFT",
    "E2E": "from the request to its last token",
}
OUTPUT_LENGTH = "output length is fixed: greedy, EOS ignored, exactly new_tokens tokens per sequence, every variant"


@dataclass(frozen=True)
class TimedRequest:
    """One request: its start and step stamps (``perf_counter`` s), batch, prompt length and tokens."""

    start: float
    stamps: tuple[float, ...]
    batch: int
    prompt_tokens: int
    tokens: Any = None


@dataclass(frozen=True)
class RequestMetrics:
    """One request's metrics (:data:`DEFINITIONS`), times in milliseconds."""

    ttft_ms: float
    tpot_ms: float
    e2e_ms: float
    itl_ms: tuple[float, ...]  # new_tokens - 1 gaps, the i-th between tokens i and i + 1
    decode_tokens_per_s: float
    prefill_tokens_per_s: float


def timed_request(session, prompt: np.ndarray, new_tokens: int,
                  on_step: Optional[Callable[[int], None]] = None) -> TimedRequest:
    """One ``session.generate`` of ``prompt``, stamped at every step (``on_step`` gets the stamps so far)."""
    stamps: list[float] = []

    def stamp() -> None:
        stamps.append(time.perf_counter())
        if on_step is not None:
            on_step(len(stamps))

    start = time.perf_counter()
    tokens = session.generate(prompt, new_tokens, stamp)
    recorded = getattr(session, "step_times", None)  # a runtime that cannot stream at this batch (OpenVINO GenAI)
    times = recorded() if recorded is not None else None  # gives each step's moment on perf_counter's clock
    if times is not None:
        stamps = [float(t) for t in times]
    batch = prompt.shape[0]
    if len(stamps) != new_tokens:
        raise RuntimeError(f"the session stamped {len(stamps)} step(s) for {new_tokens} new tokens")
    if tuple(np.shape(tokens)) != (batch, new_tokens):
        raise RuntimeError(f"the session returned tokens of shape {np.shape(tokens)}, not ({batch}, {new_tokens})")
    return TimedRequest(start, tuple(stamps), batch, prompt.shape[1], np.asarray(tokens, dtype=np.int64))


def request_metrics(request: TimedRequest) -> RequestMetrics:
    """The metrics of one request with at least two new tokens, from its timestamps alone."""
    new_tokens = len(request.stamps)
    if new_tokens < 2:
        raise ValueError("TPOT and decode tokens/s need at least two new tokens")
    ttft = request.stamps[0] - request.start
    e2e = request.stamps[-1] - request.start
    decode = e2e - ttft
    gaps = np.diff(np.asarray(request.stamps)) * 1e3
    return RequestMetrics(ttft_ms=ttft * 1e3, tpot_ms=decode * 1e3 / (new_tokens - 1), e2e_ms=e2e * 1e3,
                          itl_ms=tuple(float(g) for g in gaps),
                          decode_tokens_per_s=request.batch * (new_tokens - 1) / decode if decode > 0 else float("inf"),
                          prefill_tokens_per_s=(request.batch * request.prompt_tokens / ttft if ttft > 0
                                                else float("inf")))


def distribution(values_ms) -> dict:
    """Median, p90, p99, min and max of ``values_ms`` (ITL gaps, say), rounded to microseconds."""
    data = np.asarray(values_ms, dtype=np.float64)
    p50, p90, p99 = np.percentile(data, [50, 90, 99])
    return {"p50": round(float(p50), 3), "p90": round(float(p90), 3), "p99": round(float(p99), 3),
            "min": round(float(data.min()), 3), "max": round(float(data.max()), 3), "count": int(data.size)}


def step_medians(requests: list[RequestMetrics]) -> list[float]:
    """The median gap of each decode step (between tokens i and i + 1) across ``requests``."""
    return [round(float(v), 3) for v in np.median(np.asarray([r.itl_ms for r in requests]), axis=0)]
