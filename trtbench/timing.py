"""Synchronized per-iteration timing: host latency (perf_counter_ns) and, on CUDA, device time (events).

The raw samples are the measurement; statistics are derived from them in :mod:`trtbench.stats`.
"""

from __future__ import annotations

import gc
import time
from dataclasses import dataclass, field
from typing import Callable, Optional

import torch

from trtbench.stats import relative_median_ci

ADAPTIVE_CHECK_EVERY = 10


@dataclass
class TimingPlan:
    """How long to time: a fixed count, or adaptive until the median's CI is tight enough."""

    warmup: int = 10
    iterations: int = 100
    mode: str = "fixed"  # fixed | adaptive
    target_rel_ci: float = 0.01
    max_time_s: float = 30.0
    min_iterations: int = 10

    @classmethod
    def from_config(cls, bench) -> "TimingPlan":
        return cls(warmup=bench.warmup, iterations=bench.iterations, mode=bench.mode,
                   target_rel_ci=bench.target_rel_ci, max_time_s=bench.max_time_s,
                   min_iterations=bench.min_iterations)


@dataclass
class Measurement:
    """Raw samples of one timed loop."""

    host_ms: list[float] = field(default_factory=list)  # synchronized host latency per iteration
    device_ms: Optional[list[float]] = None  # CUDA-event time per iteration (CUDA only)
    stopped_by: str = "iterations"  # iterations | target_rel_ci | max_time_s


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _done(plan: TimingPlan, samples: list[float], started_ns: int) -> Optional[str]:
    """Why the timed loop should stop now (None to go on)."""
    n = len(samples)
    if plan.mode == "fixed":
        return "iterations" if n >= plan.iterations else None
    if (time.perf_counter_ns() - started_ns) / 1e9 >= plan.max_time_s:
        return "max_time_s"
    if n >= plan.min_iterations and n % ADAPTIVE_CHECK_EVERY == 0 and relative_median_ci(samples) <= plan.target_rel_ci:
        return "target_rel_ci"
    return None


def measure(fn: Callable[[], object], device: torch.device, plan: TimingPlan,
            tick: Callable[[], None] = lambda: None) -> Measurement:
    """Warm up, then time ``fn`` once per iteration until ``plan`` says stop.

    Each iteration is synchronized (CUDA) before its end time is read, so host latency
    is what a caller waits. ``tick`` is called once per iteration outside the timed region
    (progress bars). Python's garbage collector is paused while timing, as ``timeit`` and
    ``torch.utils.benchmark`` do, so its pauses do not land in random samples.
    """
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _timed_loop(fn, device, plan, tick)
    finally:
        if gc_was_enabled:
            gc.enable()


def _timed_loop(fn: Callable[[], object], device: torch.device, plan: TimingPlan,
                tick: Callable[[], None]) -> Measurement:
    for _ in range(plan.warmup):
        fn()
    _synchronize(device)
    measurement = Measurement()
    cuda = device.type == "cuda"
    events: list[tuple] = []
    started = time.perf_counter_ns()
    while True:
        if cuda:
            start_event = torch.cuda.Event(enable_timing=True)
            end_event = torch.cuda.Event(enable_timing=True)
            t0 = time.perf_counter_ns()
            start_event.record()
            fn()
            end_event.record()
            torch.cuda.synchronize(device)
            t1 = time.perf_counter_ns()
            events.append((start_event, end_event))
        else:
            t0 = time.perf_counter_ns()
            fn()
            t1 = time.perf_counter_ns()
        measurement.host_ms.append((t1 - t0) / 1e6)
        tick()
        reason = _done(plan, measurement.host_ms, started)
        if reason:
            measurement.stopped_by = reason
            break
    if cuda:
        measurement.device_ms = [start.elapsed_time(end) for start, end in events]
    return measurement
