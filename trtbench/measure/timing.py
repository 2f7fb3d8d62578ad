"""Interleaved timing of one point's variants in rounds of blocks of calls (why: docs/measuring.md)."""

from __future__ import annotations

import dataclasses
import gc
import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Protocol, Sequence, runtime_checkable

import torch

from trtbench.analysis.race import RACE_MARGIN
from trtbench.measure.energy import counter_or_none
from trtbench.measure.race import CAPPED_MIN_ROUNDS, Entrants, Lap, Race
from trtbench.measure.rounds import BlockAt, Rounds
from trtbench.measure.settle import Settle, wait_until_idle
from trtbench.measure.trackers import Calls, Tracker, block_trackers
from trtbench.core.stats import BlockSeries, median_interval, pooled_between_variance

MIN_ROUNDS = 5  # race: false's fewest rounds of each process before its CI target stops it (docs/measuring.md)
BUDGET_S = 6.0  # the race's default budget: one point's timed rounds, all variants (docs/measuring.md, "The budget")
TARGET_REL_CI, MAX_TIME_S = 0.02, 20.0  # race: false's defaults
FIXED_ROUNDS = 10  # fixed timing splits its iterations into this many rounds
ALONE_BLOCKS = 3  # the interference check: blocks of the baseline timed alone after the rounds
AFTER_SWITCH_IN = 2  # adaptive: timed calls at least, per block that starts with a switch-in call
SCHEDULES = ("interleaved", "steady")  # benchmark.schedule (docs/measuring.md, "The schedule")


@dataclass
class TimingSettings:
    """How long to time each shape point (the config's ``benchmark:`` keys)."""

    mode: str = "adaptive"  # adaptive | fixed
    warmup: int = 5  # untimed calls per variant before the first round, at least...
    warmup_s: float = 1.0  # ...and until the point has warmed up this long (all variants, interleaved)
    iterations: int = 100  # fixed mode: timed calls per variant
    race: bool = True  # adaptive: the variants of a point race (docs/measuring.md, "Racing"); false: each on its own CI
    race_margin: float = RACE_MARGIN  # race: a variant slower than the leader by more than this at 95% stops
    budget_s: Optional[float] = None  # race: one point's timed rounds, all variants together (None: BUDGET_S)
    target_rel_ci: Optional[float] = None  # race false: 95% CI half-width of the median, relative to it (TARGET_REL_CI)
    max_time_s: Optional[float] = None  # race false: cap on one point's timed rounds, all variants (MAX_TIME_S)
    min_iterations: int = 10  # adaptive: timed calls per variant before it may stop
    block_s: float = 0.25  # one variant's share of a round (docs/measuring.md, "Interleaved rounds")
    switch_in_below_s: float = 0.1  # shorter calls: each block starts with a switch-in call, kept out of the samples
    schedule: str = "steady"  # each block's timed calls after a block's worth of untimed ones; interleaved: without

    @property
    def racing(self) -> bool:
        """Whether the variants of a point race (adaptive timing with ``race``)."""
        return self.mode == "adaptive" and self.race

    @property
    def ci_target(self) -> float:
        """race: false's target: ``target_rel_ci`` or its default."""
        return TARGET_REL_CI if self.target_rel_ci is None else self.target_rel_ci

    @property
    def cap_s(self) -> float:
        """What one point's timed rounds may take: the race's budget, or race: false's ``max_time_s``."""
        if self.racing:
            return BUDGET_S if self.budget_s is None else self.budget_s
        return MAX_TIME_S if self.max_time_s is None else self.max_time_s


@dataclass
class RawTiming:
    """Raw samples of one variant at one point: host ms per call, per block, and its facts."""

    rounds: list[list[float]] = field(default_factory=list)
    block_process: list[int] = field(default_factory=list)  # per entry of rounds: the replicate process that timed it
    block_round: list[int] = field(default_factory=list)  # per entry of rounds: the point's round it was timed in
    device_rounds: Optional[list[list[float]]] = None  # CUDA-event ms per call (CUDA only)
    stopped_by: str = "iterations"  # iterations | target_rel_ci | max_time_s; raced: race | decided | budget_s
    settle_s: list[float] = field(default_factory=list)  # per block: the wait until its threads went idle
    settle_cpu_ms: list[float] = field(default_factory=list)  # per block: CPU its threads used meanwhile (spinning)
    unsettled: int = 0  # blocks after which the threads were still busy at the settle cap
    cpu_between_ms: list[float] = field(default_factory=list)  # per block: CPU its process used since the last
    alone: list[float] = field(default_factory=list)  # baseline only: ms per call timed alone, after the rounds
    switch_in_ms: list[float] = field(default_factory=list)  # per block: its switch-in call, kept out of the rounds
    tracked: dict[str, list] = field(default_factory=dict)  # per tracker key: its value of each block that read it
    race: Optional[dict] = None  # raced: its part in the point's race (trtbench.measure.race.Race.outcomes)

    @property
    def samples(self) -> list[float]:
        return [s for r in self.rounds for s in r]

    def kept(self, key: str) -> list:
        """The values the tracker ``key`` gave, one per block it read (:mod:`trtbench.measure.trackers`)."""
        return self.tracked.get(key, [])

    @property
    def series(self) -> BlockSeries:
        """Each block's median with its process and round (none kept: one process's, in round order)."""
        return BlockSeries.of_blocks(self.rounds, self.block_process or [0] * len(self.rounds),
                                     self.block_round or range(len(self.rounds)))


@dataclass(frozen=True)
class Block:
    """One block of calls of one variant, and what its process did around it."""

    host_ms: list[float]
    device_ms: Optional[list[float]] = None
    settle: Settle = Settle(0.0, idle=True)
    cpu_between_ms: Optional[float] = None  # CPU the timer's process used while others were timed (workers)
    switch_in_ms: Optional[float] = None  # the block's first call, made before the timed ones (host ms)
    tracked: dict[str, Any] = field(default_factory=dict)  # each tracker's value over the timed calls, by its key


@runtime_checkable
class BlockTimer(Protocol):
    """Times blocks of calls of one variant at one point, after ``lead_in`` untimed calls (the first timed apart)."""

    def block(self, calls: int, lead_in: int = 0) -> Block: ...


def synchronize(device: torch.device) -> None:
    """Wait for the device's queued work (a no-op on the CPU)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_calls(fn: Callable[[], object], device: torch.device, calls: int, lead_in: int = 0,
               trackers: Sequence[Tracker] = ()) -> Block:
    """``calls`` timed calls of ``fn``, ``trackers`` read around them, after ``lead_in`` (the first: switch-in)."""
    host, events, returned = [], [], []
    cuda = device.type == "cuda"
    switch_in_ms = None
    for n in range(lead_in):
        t0 = time.perf_counter_ns()
        fn()
        synchronize(device)
        if n == 0:
            switch_in_ms = (time.perf_counter_ns() - t0) / 1e6
    for tracker in trackers:
        tracker.start()
    for _ in range(calls):
        if cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            t0 = time.perf_counter_ns()
            start.record()
            fn()
            end.record()
            returned.append((time.perf_counter_ns() - t0) / 1e6)
            torch.cuda.synchronize(device)
            t1 = time.perf_counter_ns()
            events.append((start, end))
        else:
            t0 = time.perf_counter_ns()
            fn()
            t1 = time.perf_counter_ns()
        host.append((t1 - t0) / 1e6)
    timed = Calls(host, returned)
    tracked = {tracker.key: value for tracker in trackers if (value := tracker.stop(timed)) is not None}
    return Block(host, [s.elapsed_time(e) for s, e in events] if cuda else None, switch_in_ms=switch_in_ms,
                 tracked=tracked)


class CallTimer:
    """Times a callable in this process; after each block, waits until the process's threads are idle."""

    def __init__(self, fn: Callable[[], object], device: torch.device, settle: bool = True):
        self.fn, self.device, self.settle = fn, device, settle
        self.trackers = block_trackers(device, counter_or_none(device))

    def block(self, calls: int, lead_in: int = 0) -> Block:
        timed = time_calls(self.fn, self.device, calls, lead_in, self.trackers)
        return dataclasses.replace(timed, settle=wait_until_idle() if self.settle else Settle(0.0, idle=True))


@dataclass(frozen=True)
class WarmedUp:
    """The accuracy check's untimed calls at a point (``call_s``, over ``elapsed_s``)."""

    call_s: dict[str, float]
    elapsed_s: float


def _warm_up(timers: dict[str, list[BlockTimer]], timing: TimingSettings,
             warmed: Optional[WarmedUp] = None) -> dict[str, float]:
    """Untimed calls, interleaved, until warm (``warmed`` counting); each variant's latest call time (s)."""
    counted = warmed is not None and set(timers) <= set(warmed.call_s)
    last = {name: warmed.call_s[name] if counted else 0.0 for name in timers}
    calls = 1 if counted else 0
    started = time.perf_counter() - (warmed.elapsed_s if counted else 0.0)

    def one_each() -> None:
        for name, processes in timers.items():
            last[name] = [timer.block(1).host_ms[0] / 1e3 for timer in processes][0]

    while calls < timing.warmup or (time.perf_counter() - started < timing.warmup_s and timing.warmup_s > 0):
        one_each()
        calls += 1
    if not calls:  # warmup 0: one call each to size the blocks is still needed
        one_each()
    return last


def _block_sizes(call_s: dict[str, float], timing: TimingSettings, switch_ins: dict[str, bool]) -> dict[str, int]:
    """Timed calls per block: the iterations split into rounds (fixed), or ``block_s``'s worth."""
    if timing.mode == "fixed":
        per_round = math.ceil(timing.iterations / min(FIXED_ROUNDS, timing.iterations))
        return {name: per_round for name in call_s}
    return {name: max(AFTER_SWITCH_IN if switch_ins[name] else 1, int(timing.block_s / max(s, 1e-9)))
            for name, s in call_s.items()}


def _lead_in(timing: TimingSettings, call_s: float, calls: int, switch_in: bool) -> int:
    """Untimed calls before each block: steady, a block's worth unless one call fills the block; else the switch-in."""
    if timing.schedule == "steady":
        return 0 if call_s >= timing.block_s else calls
    return int(switch_in)


def _precise(timing: TimingSettings, m: RawTiming, between_var: Optional[float]) -> bool:
    """Whether ``m``'s median's two-level 95% interval is within ``target_rel_ci``, after ``min_iterations``."""
    if len(m.samples) < timing.min_iterations:
        return False
    return median_interval(m.series, between_var).rel_halfwidth <= timing.ci_target


def _finished(timing: TimingSettings, results: dict[str, RawTiming], active: list[str], cycles: int, capped: bool,
              baseline: Optional[str]) -> dict[str, str]:
    """The active variants that stop after ``cycles`` (``capped``: past the cap), with why; the baseline stays last."""
    if timing.mode == "fixed":
        done = all(len(results[n].samples) >= timing.iterations * len(set(results[n].block_process)) for n in active)
        return {n: "iterations" for n in active} if done else {}
    between_var = pooled_between_variance(results[n].series for n in results if results[n].rounds)
    precise = [n for n in active if cycles >= MIN_ROUNDS and _precise(timing, results[n], between_var)]
    if capped:
        return {n: "target_rel_ci" if n in precise else "max_time_s" for n in active}  # a row that got there says so
    if cycles < MIN_ROUNDS:
        return {}
    if baseline is None:
        return {n: "target_rel_ci" for n in active} if len(precise) == len(active) else {}
    if baseline not in active:
        return {n: "target_rel_ci" for n in precise}
    others = [n for n in active if n != baseline]
    leaving = {n: "target_rel_ci" for n in precise if n != baseline}
    if len(leaving) == len(others) and baseline in precise:
        leaving[baseline] = "target_rel_ci"
    return leaving


def measure_interleaved(timers: dict[str, BlockTimer | Callable[[], object] | list[BlockTimer]], device: torch.device,
                        timing: TimingSettings, tick: Callable[[], None] = lambda: None,
                        entrants: Entrants = Entrants(), warmed: Optional[WarmedUp] = None) -> dict[str, RawTiming]:
    """Time every variant of one point in rounds until ``timing`` says stop, then the baseline alone, the GC paused."""
    processes = {name: [p if isinstance(p, BlockTimer) else CallTimer(p, device) for p in
                        (t if isinstance(t, list) else [t])] for name, t in timers.items()}
    names, baseline = list(processes), entrants.baseline
    gc_was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        call_s = _warm_up(processes, timing, warmed)
        switch_ins = {name: s < timing.switch_in_below_s for name, s in call_s.items()}
        blocks = _block_sizes(call_s, timing, switch_ins)
        lead_ins = {name: _lead_in(timing, call_s[name], blocks[name], switch_ins[name]) for name in names}
        synchronize(device)
        results = {name: RawTiming(device_rounds=[] if device.type == "cuda" else None) for name in names}
        rounds = Rounds({name: len(timers_of) for name, timers_of in processes.items()})
        race = Race(timing.race_margin, timing.cap_s, entrants) if timing.racing else None

        def block(at: BlockAt) -> None:
            m, calls = results[at.variant], blocks[at.variant]
            if timing.mode == "fixed":
                calls = min(calls, timing.iterations - sum(len(r) for r, p in zip(m.rounds, m.block_process)
                                                           if p == at.process))
            if calls > 0:
                _keep(m, processes[at.variant][at.process].block(calls, lead_ins[at.variant]), at.process, at.round)

        def finished(rounds: Rounds) -> dict[str, str]:
            spent = time.perf_counter() - started  # a further process's start included: one budget for the point
            if race is None:  # at cycles' ends; the cap's minimum counts all rounds (docs/measuring.md)
                if not rounds.at_cycle_end:
                    return {}
                capped = spent >= timing.cap_s and rounds.rounds >= CAPPED_MIN_ROUNDS
                return _finished(timing, results, rounds.active, rounds.cycles, capped, baseline)
            step = race.step({n: results[n].series for n in names if results[n].rounds},
                             Lap(rounds.rounds, rounds.cycles, {n: rounds.processes[n] for n in rounds.active}, spent,
                                 cycle_end=rounds.at_cycle_end))
            if step.wants is not None:
                timer = entrants.more(step.wants.variant)
                race.asked(step.wants, started=timer is not None)
                if timer is not None:  # warmed up untimed, as the others were
                    for _ in range(max(1, timing.warmup)):
                        timer.block(1)
                    processes[step.wants.variant].append(timer)
                    rounds.add_process(step.wants.variant)
            return step.stops

        started = time.perf_counter()
        rounds.run(block, finished, tick)
        for name, reason in rounds.stopped_by.items():
            results[name].stopped_by = reason
        if race is not None:
            for name, part in race.outcomes({n: results[n].series for n in names}).items():
                results[name].race = part
        if baseline in results and len(names) > 1:
            alone = processes[baseline][0]
            leads = [lead_ins[baseline]] + [int(switch_ins[baseline])] * (ALONE_BLOCKS - 1)  # back to back
            results[baseline].alone = [s for lead in leads for s in alone.block(blocks[baseline], lead).host_ms]
        return results
    finally:
        if gc_was_enabled:
            gc.enable()


def _keep(m: RawTiming, block: Block, process: int, round_index: int) -> None:
    """Add ``block``, timed by ``process`` in round ``round_index``, and what its process did around it to ``m``."""
    m.rounds.append(block.host_ms)
    m.block_process.append(process)
    m.block_round.append(round_index)
    if block.device_ms is not None:
        m.device_rounds.append(block.device_ms)
    m.settle_s.append(block.settle.wait_s)
    m.settle_cpu_ms.append(block.settle.cpu_s * 1e3)
    m.unsettled += not block.settle.idle
    if block.cpu_between_ms is not None:
        m.cpu_between_ms.append(block.cpu_between_ms)
    if block.switch_in_ms is not None:
        m.switch_in_ms.append(block.switch_in_ms)
    for key, value in block.tracked.items():
        m.tracked.setdefault(key, []).append(value)
