"""Timing loop, statistics and the accuracy check, on known inputs."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
import torch

from trtbench.parity import check_parity
from trtbench.stats import median_ci_halfwidth, summarize
from trtbench.timing import TimingPlan, measure


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


def test_fixed_plan_times_exactly_the_iterations_and_warms_up():
    calls = []
    plan = TimingPlan(warmup=3, iterations=7)
    m = measure(lambda: calls.append(1), torch.device("cpu"), plan)
    assert len(calls) == 10 and len(m.host_ms) == 7 and m.stopped_by == "iterations"
    assert m.device_ms is None


def test_host_timing_measures_real_time():
    plan = TimingPlan(warmup=0, iterations=5)
    m = measure(lambda: time.sleep(0.005), torch.device("cpu"), plan)
    assert all(4.5 <= t < 100 for t in m.host_ms)


def test_adaptive_plan_stops_at_max_time():
    plan = TimingPlan(warmup=0, mode="adaptive", target_rel_ci=1e-9, max_time_s=0.2, min_iterations=5)
    started = time.perf_counter()
    m = measure(lambda: time.sleep(0.001), torch.device("cpu"), plan)
    assert m.stopped_by == "max_time_s" and 0.2 <= time.perf_counter() - started < 2.0


def test_adaptive_plan_stops_when_median_is_precise():
    plan = TimingPlan(warmup=0, mode="adaptive", target_rel_ci=0.5, max_time_s=30, min_iterations=10)
    m = measure(lambda: time.sleep(0.002), torch.device("cpu"), plan)
    assert m.stopped_by == "target_rel_ci" and len(m.host_ms) < 200


def test_compare_passes_within_tolerance_and_reports_errors():
    ref = torch.tensor([[1.0, 5.0, 2.0], [3.0, 0.0, 1.0]])
    out = ref + 1e-4
    p = check_parity(out, ref, atol=1e-3, rtol=0)
    assert p.ok and p.max_abs_err == pytest.approx(1e-4, rel=1e-2) and p.top1_agree == 1.0
    assert p.max_rel_err == pytest.approx(1e-4 / 5.0, rel=1e-2)


def test_compare_fails_and_counts_top1_disagreement():
    ref = torch.tensor([[1.0, 5.0, 2.0], [3.0, 0.0, 1.0]])
    out = ref.clone()
    out[1, 1] = 9.0
    p = check_parity(out, ref, atol=1e-3, rtol=1e-3)
    assert not p.ok and p.max_abs_err == 9.0 and p.top1_agree == 0.5


def test_compare_handles_nested_outputs_and_nan():
    ref = {"logits": torch.ones(2, 4), "aux": (torch.zeros(3),)}
    assert check_parity({"logits": torch.ones(2, 4), "aux": (torch.zeros(3),)}, ref, 0, 0).ok
    bad = {"logits": torch.full((2, 4), float("nan")), "aux": (torch.zeros(3),)}
    assert not check_parity(bad, ref, 1e-3, 1e-3).ok


def test_bound_is_relative_to_the_output_scale():
    ref = torch.tensor([[200.0, 0.001, -150.0]])
    out = torch.tensor([[200.05, 0.03, -150.02]])  # the near-zero logit moved 30x, by 1.5e-4 of the scale
    assert check_parity(out, ref, atol=1e-5, rtol=5e-3).ok
    assert not check_parity(ref * 1.01, ref, atol=1e-5, rtol=5e-3).ok  # a 1% error of the largest logit fails


def _round_to_tf32(t: torch.Tensor) -> torch.Tensor:
    bits = t.contiguous().view(torch.int32)
    return ((bits + 0x1000) & ~0x1FFF).view(torch.float32)


def test_default_fp32_tolerance_accepts_tf32_rounding_of_a_random_resnet():
    """On GPUs, cuDNN and TensorRT fp32 use TF32 by default: that must not read as a failed check."""
    import torchvision

    from trtbench.config import default_tolerances

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
    assert check_parity(tf32_out, ref, tol.atol, tol.rtol).ok
