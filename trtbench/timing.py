"""Interleaved, synchronized timing of the variants of one shape point.

The variants of a point are timed in rounds: each round runs a short block of calls of every
variant, in an order that rotates from round to round. Drift of a shared machine (other load,
clock changes, the first seconds of a process running slow) then hits every variant alike, and
the paired rounds give each speedup a confidence interval (:func:`trtbench.stats.paired_ratio`).
Every call is timed on its own with ``perf_counter_ns``, synchronized on CUDA, where CUDA events
also time it on the device. The raw samples are the measurement; stats are derived elsewhere.
"""

from __future__ import annotations

import gc
import math
import time
from dataclasses import dataclass, field
from typing import Callable, Optional

import torch

from trtbench.stats import relative_median_ci

MIN_ROUNDS = 5  # adaptive timing never stops on its CI target before this many rounds
CAPPED_MIN_ROUNDS = 3  # nor on its time cap before this many: a paired speedup CI needs three
FIXED_ROUNDS = 10  # fixed timing splits its iterations into this many rounds


@dataclass
class TimingPlan:
    """How long to time each shape point (``benchmark:`` keys of the config).

    ``adaptive`` (the default) runs rounds until every variant's median has a 95% CI within
    ``target_rel_ci`` (and at least ``min_iterations`` calls), or until ``max_time_s`` has passed
    for the point (but never fewer than three rounds, which a speedup's paired CI needs). ``fixed`` runs ``iterations`` calls per variant.
    """

    mode: str = "adaptive"  # adaptive | fixed
    warmup: int = 5  # untimed calls per variant before the first round, at least...
    warmup_s: float = 1.0  # ...and until the point has warmed up this long (all variants, interleaved)
    iterations: int = 100  # fixed mode: timed calls per variant
    target_rel_ci: float = 0.02  # adaptive: 95% CI half-width of the median, relative to it
    max_time_s: float = 20.0  # adaptive: cap on one point's timed rounds (all variants together)
    min_iterations: int = 10  # adaptive: timed calls per variant before it may stop
    block_s: float = 0.05  # one variant's share of a round: calls are grouped to last about this long


@dataclass
class Measurement:
    """Raw samples of one variant at one point: host ms per call, one list per round."""

    rounds: list[list[float]] = field(default_factory=list)
    device_rounds: Optional[list[list[float]]] = None  # CUDA-event ms per call (CUDA only)
    stopped_by: str = "iterations"  # iterations | target_rel_ci | max_time_s

    @property
    def samples(self) -> list[float]:
        return [s for r in self.rounds for s in r]


def synchronize(device: torch.device) -> None:
    """Wait for the device's queued work (a no-op on the CPU)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class _Timer:
    """Times single calls of one callable, host and (on CUDA) device."""

    def __init__(self, fn: Callable[[], object], device: torch.device):
        self.fn = fn
        self.device = device
        self.cuda = device.type == "cuda"

    def block(self, calls: int) -> tuple[list[float], Optional[list[float]]]:
        host, events = [], []
        fn, device = self.fn, self.device
        for _ in range(calls):
            if self.cuda:
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                t0 = time.perf_counter_ns()
                start.record()
                fn()
                end.record()
                torch.cuda.synchronize(device)
                t1 = time.perf_counter_ns()
                events.append((start, end))
            else:
                t0 = time.perf_counter_ns()
                fn()
                t1 = time.perf_counter_ns()
            host.append((t1 - t0) / 1e6)
        return host, ([s.elapsed_time(e) for s, e in events] if self.cuda else None)


def _warm_up(timers: dict[str, _Timer], plan: TimingPlan) -> dict[str, float]:
    """Untimed calls, interleaved, until each variant had ``warmup`` and the point ``warmup_s``;
    returns each variant's latest call time (s) to size its blocks."""
    last = {name: 0.0 for name in timers}
    calls = 0
    started = time.perf_counter()
    while calls < plan.warmup or (time.perf_counter() - started < plan.warmup_s and plan.warmup_s > 0):
        for name, timer in timers.items():
            host, _ = timer.block(1)
            last[name] = host[0] / 1e3
        calls += 1
    if not calls:  # warmup 0: one call each to size the blocks is still needed
        for name, timer in timers.items():
            last[name] = timer.block(1)[0][0] / 1e3
    return last


def _block_sizes(call_s: dict[str, float], plan: TimingPlan) -> dict[str, int]:
    if plan.mode == "fixed":
        per_round = math.ceil(plan.iterations / min(FIXED_ROUNDS, plan.iterations))
        return {name: per_round for name in call_s}
    return {name: max(1, int(plan.block_s / max(s, 1e-9))) for name, s in call_s.items()}


def _stop_reason(plan: TimingPlan, results: dict[str, Measurement], rounds: int, started: float) -> Optional[str]:
    if plan.mode == "fixed":
        done = all(len(m.samples) >= plan.iterations for m in results.values())
        return "iterations" if done else None
    if time.perf_counter() - started >= plan.max_time_s and rounds >= CAPPED_MIN_ROUNDS:
        return "max_time_s"
    if rounds < MIN_ROUNDS:
        return None
    for m in results.values():
        samples = m.samples
        if len(samples) < plan.min_iterations or relative_median_ci(samples) > plan.target_rel_ci:
            return None
    return "target_rel_ci"


def measure_interleaved(fns: dict[str, Callable[[], object]], device: torch.device, plan: TimingPlan,
                        tick: Callable[[], None] = lambda: None) -> dict[str, Measurement]:
    """Time every callable of one point in rotating rounds until ``plan`` says stop.

    ``tick`` is called once per round, outside the timed blocks. The garbage collector is
    paused while timing, as ``timeit`` and ``torch.utils.benchmark`` do. In fixed mode the last
    round is trimmed so each variant gets exactly ``iterations`` samples.
    """
    timers = {name: _Timer(fn, device) for name, fn in fns.items()}
    names = list(timers)
    gc_was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        blocks = _block_sizes(_warm_up(timers, plan), plan)
        synchronize(device)
        results = {name: Measurement(device_rounds=[] if device.type == "cuda" else None) for name in names}
        started = time.perf_counter()
        rounds = 0
        while True:
            shift = rounds % len(names)
            for name in names[shift:] + names[:shift]:
                calls = blocks[name]
                if plan.mode == "fixed":
                    calls = min(calls, plan.iterations - len(results[name].samples))
                if calls <= 0:
                    continue
                host, dev = timers[name].block(calls)
                results[name].rounds.append(host)
                if dev is not None:
                    results[name].device_rounds.append(dev)
            rounds += 1
            tick()
            reason = _stop_reason(plan, results, rounds, started)
            if reason:
                for m in results.values():
                    m.stopped_by = reason
                return results
    finally:
        if gc_was_enabled:
            gc.enable()
