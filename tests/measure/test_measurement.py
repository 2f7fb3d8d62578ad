"""Timing loop, statistics and the accuracy check, on known inputs."""

from __future__ import annotations

import dataclasses
import math
import statistics
import time

import numpy as np
import pytest
import torch

from helpers.timers import ScriptedCost
from trtbench.measure.accuracy import elementwise_accuracy
from trtbench.core.stats import bootstrap_median_ratio, median_ci_halfwidth, summarize
from trtbench.measure.timing import (CAPPED_MIN_ROUNDS, MIN_ROUNDS, RawTiming, TimingSettings, WarmedUp,
                                     measure_interleaved)


def test_summarize_matches_numpy():
    rng = np.random.default_rng(0)
    samples = rng.lognormal(mean=1.0, sigma=0.3, size=500)
    s = summarize(samples)
    assert s.mean == pytest.approx(samples.mean())
    assert s.std == pytest.approx(samples.std(ddof=1))
    assert s.median == pytest.approx(np.median(samples))
    assert s.p99 == pytest.approx(np.percentile(samples, 99))
    assert s.min == samples.min() and s.max == samples.max() and s.iterations == 500


def test_noisy_flag_follows_iqr_over_median():
    steady = summarize([10.0, 10.1, 10.0, 9.9, 10.05, 10.0, 9.95, 10.02])
    jumpy = summarize([10.0, 14.0, 8.0, 12.0, 10.0, 16.0, 7.0, 11.0])
    assert not steady.noisy and jumpy.noisy


def test_median_ci_shrinks_with_more_samples():
    rng = np.random.default_rng(1)
    small = np.sort(rng.normal(10, 1, 50))
    large = np.sort(rng.normal(10, 1, 5000))
    assert median_ci_halfwidth(large) < median_ci_halfwidth(small)
    # for a normal sample the median's 95% CI half-width is about 1.96 * 1.2533 * sigma / sqrt(n)
    assert median_ci_halfwidth(large) == pytest.approx(1.96 * 1.2533 / math.sqrt(5000), rel=0.3)


CPU = torch.device("cpu")


def measure_one(fn, timing):
    """One callable through the interleaved timer; its RawTiming."""
    return measure_interleaved({"only": fn}, CPU, timing)["only"]


def test_fixed_plan_times_exactly_the_iterations_and_warms_up():
    calls = []
    timing = TimingSettings(mode="fixed", warmup=3, warmup_s=0, iterations=7, schedule="interleaved")
    m = measure_one(lambda: calls.append(1), timing)
    # 3 warm-up calls, 7 timed ones in 7 rounds, each round's block after its switch-in call (kept apart)
    assert len(calls) == 3 + 7 + 7 and len(m.samples) == 7 and m.stopped_by == "iterations"
    assert len(m.switch_in_ms) == 7
    calls.clear()
    m = measure_one(lambda: calls.append(1), dataclasses.replace(timing, switch_in_below_s=0))
    assert len(calls) == 10 and len(m.samples) == 7 and m.switch_in_ms == []
    assert m.device_rounds is None


def test_host_timing_measures_real_time():
    timing = TimingSettings(mode="fixed", warmup=0, warmup_s=0, iterations=5)
    m = measure_one(lambda: time.sleep(0.005), timing)
    assert len(m.samples) == 5 and all(4.5 <= t < 100 for t in m.samples)


def test_adaptive_plan_stops_at_max_time():
    timing = TimingSettings(mode="adaptive", race=False, warmup=0, warmup_s=0, target_rel_ci=1e-9, max_time_s=0.2,
                            min_iterations=5, block_s=0.01)
    started = time.perf_counter()
    m = measure_one(lambda: time.sleep(0.001), timing)
    assert m.stopped_by == "max_time_s" and time.perf_counter() - started >= 0.2
    # it stops after the first round that ends past the cap (or at the fewest rounds a paired CI needs):
    # every earlier round was timed within the cap, so their samples (wall time inside it) add up to less,
    # however busy the machine
    assert len(m.rounds) == CAPPED_MIN_ROUNDS or sum(m.samples[:-len(m.rounds[-1])]) < 200


def test_adaptive_plan_stops_when_median_is_precise():
    timing = TimingSettings(mode="adaptive", race=False, warmup=0, warmup_s=0, target_rel_ci=0.5, max_time_s=30,
                            min_iterations=10, block_s=0.01)
    m = measure_one(lambda: time.sleep(0.002), timing)
    assert m.stopped_by == "target_rel_ci" and len(m.samples) < 200
    assert len(m.rounds) >= MIN_ROUNDS and len(m.samples) >= 10


def test_rounds_rotate_the_order_of_the_variants():
    order = []
    fns = {name: (lambda name=name: order.append(name)) for name in ("a", "b", "c")}
    timing = TimingSettings(mode="fixed", warmup=0, warmup_s=0, iterations=4,  # 4 rounds of 1 call each
                            switch_in_below_s=0, schedule="interleaved")  # (no lead-in: each call in order is timed)
    result = measure_interleaved(fns, CPU, timing)
    assert order[:3] == ["a", "b", "c"]  # warmup 0 still calls each once to size its blocks
    assert order[3:] == ["a", "b", "c", "b", "c", "a", "c", "a", "b", "a", "b", "c"]
    assert all(len(m.rounds) == 4 and all(len(r) == 1 for r in m.rounds) for m in result.values())


class _Logged(ScriptedCost):
    """A scripted timer that notes (variant, process) in ``order`` at each block."""

    def __init__(self, order: list, unit: tuple):
        super().__init__(1.0)
        self.order, self.unit = order, unit

    def block(self, calls: int, lead_in: int = 0):
        self.order.append(self.unit)
        return super().block(calls, lead_in)


def test_replicate_processes_take_the_rounds_in_turn_and_stop_at_a_cycles_end():
    """A round is one block of each variant, its processes taking the rounds in turn; the variants' order rotates
    each cycle of 3 rounds, so each process meets each place; variants stop only once a cycle is whole."""
    order: list = []
    timers = {name: [_Logged(order, (name, i)) for i in range(3)] for name in ("a", "b")}
    timing = TimingSettings(mode="fixed", warmup=0, warmup_s=0, iterations=4, switch_in_below_s=0)  # 4 rounds a process
    result = measure_interleaved(timers, CPU, timing)
    timed = order[6:]  # after one sizing call of each of the 6 processes
    cycle = [("a", 0), ("b", 0), ("a", 1), ("b", 1), ("a", 2), ("b", 2)]
    swapped = [("b", 0), ("a", 0), ("b", 1), ("a", 1), ("b", 2), ("a", 2)]
    assert timed == cycle + swapped + cycle + swapped
    for m in result.values():
        assert m.block_process == [0, 1, 2] * 4 and m.block_round == list(range(12))
        assert len(m.samples) == 12  # iterations per process

    order.clear()
    precise = TimingSettings(mode="adaptive", race=False, warmup=0, warmup_s=0, target_rel_ci=0.5, max_time_s=30,
                             min_iterations=1)
    result = measure_interleaved({name: [_Logged(order, (name, i)) for i in range(3)] for name in ("a", "b")}, CPU,
                                 precise)
    for m in result.values():  # precise at once: MIN_ROUNDS rounds of each process, no more
        assert m.stopped_by == "target_rel_ci" and m.block_process == [0, 1, 2] * MIN_ROUNDS

    capped = TimingSettings(mode="adaptive", race=False, warmup=0, warmup_s=0, target_rel_ci=1e-9, max_time_s=0)
    result = measure_interleaved({name: [_Logged(order, (name, i)) for i in range(3)] for name in ("a", "b")}, CPU,
                                 capped)
    for m in result.values():  # the cap's minimum is three rounds in all, here one cycle: one of each process
        assert m.stopped_by == "max_time_s" and m.block_process == [0, 1, 2] and CAPPED_MIN_ROUNDS == 3
    result = measure_interleaved({name: [_Logged(order, (name, i)) for i in range(2)] for name in ("a", "b")}, CPU,
                                 capped)
    for m in result.values():  # and a whole cycle: two of each of two processes
        assert m.stopped_by == "max_time_s" and m.block_process == [0, 1, 0, 1]


def test_fixed_mode_gives_exactly_iterations_samples_per_variant_in_rounds():
    calls = {"fast": 0, "slow": 0}

    def fast():
        calls["fast"] += 1

    def slow():
        calls["slow"] += 1
        time.sleep(0.0005)

    timing = TimingSettings(mode="fixed", warmup=2, warmup_s=0, iterations=23, schedule="interleaved")
    result = measure_interleaved({"fast": fast, "slow": slow}, CPU, timing)
    for name, m in result.items():
        assert len(m.samples) == 23 and m.stopped_by == "iterations"
        assert [len(r) for r in m.rounds] == [3] * 7 + [2]  # ceil(23 / 10) per round, the last one trimmed
        assert calls[name] == 2 + 23 + 8  # warm-up, timed, and each of the 8 blocks' switch-in call
    # each sample times its own callable: every slow one slept 0.5 ms (sleep never returns early), while a
    # preemption on a busy machine may stretch a fast one now and then, but not most of them
    assert min(result["slow"].samples) >= 0.5 > statistics.median(result["fast"].samples)


def test_adaptive_stops_on_target_or_time_and_keeps_each_rounds_samples():
    ticks = []
    timing = TimingSettings(mode="adaptive", race=False, warmup=1, warmup_s=0, target_rel_ci=0.5, max_time_s=20,
                            min_iterations=4, block_s=0.004)
    result = measure_interleaved({"a": lambda: time.sleep(0.001), "b": lambda: time.sleep(0.002)}, CPU, timing,
                                 tick=lambda: ticks.append(1))
    for m in result.values():
        assert m.stopped_by == "target_rel_ci"
        assert len(m.rounds) == len(ticks) >= MIN_ROUNDS  # one tick per round
        assert all(isinstance(r, list) and r and all(isinstance(x, float) for x in r) for r in m.rounds)
        assert sum(map(len, m.rounds)) == len(m.samples)
    # blocks are sized to about block_s per variant from its last warm-up call, so the faster callable gets
    # more calls per round: shown with timers whose calls take a fixed time (one warm-up call that a busy
    # machine stretches would size the real ones alike)
    sized = measure_interleaved({"a": ScriptedCost(1.0), "b": ScriptedCost(2.0)}, CPU, timing)
    assert [len(sized[name].rounds[0]) for name in ("a", "b")] == [4, 2]  # 4 ms of 1 ms calls, of 2 ms calls
    assert all(m.stopped_by == "target_rel_ci" and len(m.rounds) == MIN_ROUNDS for m in sized.values())

    capped = TimingSettings(mode="adaptive", race=False, warmup=0, warmup_s=0, target_rel_ci=1e-9, max_time_s=0.05,
                            min_iterations=1, block_s=0.04)
    m = measure_interleaved({"a": lambda: time.sleep(0.002), "b": lambda: time.sleep(0.002)}, CPU, capped)["a"]
    assert m.stopped_by == "max_time_s"
    assert len(m.rounds) >= CAPPED_MIN_ROUNDS  # the cap never leaves fewer rounds than a paired CI needs


def test_the_unpaired_bootstrap_of_two_runs_samples_covers_their_median_ratio():
    """core.stats.bootstrap_median_ratio, compare's interval over two runs' per-call samples, covers the ratio of
    their medians and is seeded."""
    rng = np.random.default_rng(3)
    base, this = 10 + rng.standard_normal(100), 5 + 0.5 * rng.standard_normal(80)
    ratio = bootstrap_median_ratio(base, this)
    assert ratio.value == pytest.approx(float(np.median(base) / np.median(this)))
    assert ratio.low < ratio.value < ratio.high and 1.8 < ratio.low < ratio.high < 2.2
    assert bootstrap_median_ratio(base, this) == ratio  # seeded


def test_compare_passes_within_tolerance_and_reports_errors():
    ref = torch.tensor([[1.0, 5.0, 2.0], [3.0, 0.0, 1.0]])
    out = ref + 1e-4
    p = elementwise_accuracy(out, ref, atol=1e-3, rtol=0)
    assert p.ok and p.max_abs_err == pytest.approx(1e-4, rel=1e-2) and p.top1_agree == 1.0
    assert p.max_rel_err == pytest.approx(1e-4 / 5.0, rel=1e-2)


def test_compare_fails_and_counts_top1_disagreement():
    ref = torch.tensor([[1.0, 5.0, 2.0], [3.0, 0.0, 1.0]])
    out = ref.clone()
    out[1, 1] = 9.0
    p = elementwise_accuracy(out, ref, atol=1e-3, rtol=1e-3)
    assert not p.ok and p.max_abs_err == 9.0 and p.top1_agree == 0.5


def test_compare_handles_nested_outputs_and_nan():
    ref = {"logits": torch.ones(2, 4), "aux": (torch.zeros(3),)}
    assert elementwise_accuracy({"logits": torch.ones(2, 4), "aux": (torch.zeros(3),)}, ref, 0, 0).ok
    bad = {"logits": torch.full((2, 4), float("nan")), "aux": (torch.zeros(3),)}
    assert not elementwise_accuracy(bad, ref, 1e-3, 1e-3).ok


def test_bound_is_relative_to_the_output_scale():
    ref = torch.tensor([[200.0, 0.001, -150.0]])
    out = torch.tensor([[200.05, 0.03, -150.02]])  # the near-zero logit moved 30x, by 1.5e-4 of the scale
    assert elementwise_accuracy(out, ref, atol=1e-5, rtol=5e-3).ok
    assert not elementwise_accuracy(ref * 1.01, ref, atol=1e-5, rtol=5e-3).ok  # a 1% error of the largest logit fails


def _round_to_tf32(t: torch.Tensor) -> torch.Tensor:
    bits = t.contiguous().view(torch.int32)
    return ((bits + 0x1000) & ~0x1FFF).view(torch.float32)


def test_default_fp32_tolerance_accepts_tf32_rounding_of_a_random_resnet():
    """On GPUs, cuDNN and TensorRT fp32 use TF32 by default: that must not read as a failed check."""
    import torchvision

    from trtbench.config.config import default_tolerances

    torch.manual_seed(0)
    model = torchvision.models.resnet18().eval()
    x = torch.randn(2, 3, 64, 64)
    with torch.no_grad():
        ref = model(x)
        for module in model.modules():
            if isinstance(module, (torch.nn.Conv2d, torch.nn.Linear)):
                module.weight.copy_(_round_to_tf32(module.weight))
                module.register_forward_pre_hook(lambda m, inputs: (_round_to_tf32(inputs[0]),))
        tf32_out = model(x)
    tol = default_tolerances()["fp32"]
    assert not torch.equal(tf32_out, ref)
    assert elementwise_accuracy(tf32_out, ref, tol.atol, tol.rtol).ok


def test_a_row_that_reaches_its_target_in_the_round_the_cap_ends_says_so():
    from trtbench.measure.timing import _finished

    timing = TimingSettings(mode="adaptive", race=False, target_rel_ci=0.02, max_time_s=1, min_iterations=5)
    steady = RawTiming(rounds=[[10.0]] * MIN_ROUNDS)
    noisy = RawTiming(rounds=[[10.0], [30.0], [5.0], [20.0], [12.0]])
    assert _finished(timing, {"a": steady, "b": noisy}, ["a", "b"], MIN_ROUNDS, True, None) == {
        "a": "target_rel_ci", "b": "max_time_s"}  # the cap has passed
    assert _finished(timing, {"a": steady, "b": noisy}, ["a", "b"], CAPPED_MIN_ROUNDS, True, None) == {
        "a": "max_time_s", "b": "max_time_s"}  # fewer rounds than a precise median needs


def test_the_accuracy_checks_call_counts_toward_the_warm_up():
    timing = TimingSettings(mode="fixed", warmup=1, warmup_s=0, iterations=4)
    cold = {"a": ScriptedCost(1.0), "b": ScriptedCost(2.0)}
    measure_interleaved(cold, CPU, timing)
    assert [t.calls for t in cold.values()] == [1 + 4, 1 + 4]  # one warm-up call each, then the timed ones
    warm = {"a": ScriptedCost(1.0), "b": ScriptedCost(2.0)}
    measure_interleaved(warm, CPU, timing, warmed=WarmedUp({"a": 0.001, "b": 0.002}, elapsed_s=0.003))
    assert [t.calls for t in warm.values()] == [4, 4]
    partly = {"a": ScriptedCost(1.0), "b": ScriptedCost(2.0)}  # a check that did not cover every variant counts not
    measure_interleaved(partly, CPU, timing, warmed=WarmedUp({"a": 0.001}, elapsed_s=0.003))
    assert [t.calls for t in partly.values()] == [5, 5]
    longer = {"a": ScriptedCost(1.0), "b": ScriptedCost(2.0)}  # warmup_s still asks for its time, checks included
    measure_interleaved(longer, CPU, TimingSettings(mode="fixed", warmup=1, warmup_s=60, iterations=4),
                        warmed=WarmedUp({"a": 0.001, "b": 0.002}, elapsed_s=60.0))
    assert [t.calls for t in longer.values()] == [4, 4]


def test_short_calls_start_each_timed_block_with_a_switch_in_call():
    """The first call after another variant ran pays a cache refill a runtime alone never pays, so a
    variant whose call is shorter than ``switch_in_below_s`` asks each timed block for a switch-in call
    first (the warm-up's blocks need none); longer calls, or ``switch_in_below_s: 0``, never do."""
    timing = TimingSettings(mode="fixed", warmup=1, warmup_s=0, iterations=4, switch_in_below_s=0.1,
                            schedule="interleaved")
    timers = {"short": ScriptedCost(1.0), "long": ScriptedCost(150.0)}
    measure_interleaved(timers, CPU, timing)
    assert (timers["short"].switch_ins, timers["long"].switch_ins) == (4, 0)
    never = {"short": ScriptedCost(1.0), "long": ScriptedCost(150.0)}
    measure_interleaved(never, CPU, dataclasses.replace(timing, switch_in_below_s=0))
    assert (never["short"].switch_ins, never["long"].switch_ins) == (0, 0)


def test_the_steady_schedule_times_each_block_after_a_blocks_worth_of_untimed_calls():
    """``schedule: steady`` (the default) reads a server that never idles: each block's timed calls come after as
    many untimed back-to-back calls, unless one call fills a block (``block_s``): such a call is timed with none;
    interleaved leads in with the switch-in call alone."""
    timing = TimingSettings(mode="fixed", warmup=1, warmup_s=0, iterations=20, switch_in_below_s=0.1,
                            schedule="interleaved")
    interleaved = {"short": ScriptedCost(1.0), "long": ScriptedCost(150.0), "longest": ScriptedCost(250.0)}
    measure_interleaved(interleaved, CPU, timing)
    assert [t.lead_ins for t in interleaved.values()] == [10, 0, 0]  # 10 rounds of 2 calls: one switch-in call each
    steady = {"short": ScriptedCost(1.0), "long": ScriptedCost(150.0), "longest": ScriptedCost(250.0)}
    results = measure_interleaved(steady, CPU, dataclasses.replace(timing, schedule=TimingSettings().schedule))
    assert [t.lead_ins for t in steady.values()] == [20, 20, 0]  # a 0.25 s call fills the default 0.25 s block
    assert all(len(r.samples) == 20 for r in results.values())  # the lead-in calls are no samples

