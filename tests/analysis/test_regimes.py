"""The machine's regimes (trtbench.analysis.regimes): change points of a point's common factor, found on synthetic
round series with known changes, and the speedup per regime of a row whose speed depends on the regime."""

from __future__ import annotations

import math

import numpy as np
import pytest

from trtbench.analysis.change_points import MIN_SHIFT
from trtbench.analysis.regimes import common_factor, covering, find_regimes, regime_dependent, regime_speedups
from trtbench.core.stats import BlockSeries, speedup_interval


def blocks(ms_per_round, offsets, noise: float, rng, heavy: bool = False) -> BlockSeries:
    """A variant's blocks: each process (its offset) in every round at that round's ms, times noise (Student t
    with 3 degrees of freedom where ``heavy``)."""
    medians, processes, rounds = [], [], []
    for process, offset in enumerate(offsets):
        for r, ms in enumerate(ms_per_round):
            draw = rng.standard_t(3) if heavy else rng.standard_normal()
            medians.append(float(ms * offset * math.exp(noise * draw)))
            processes.append(process)
            rounds.append(r)
    return BlockSeries(tuple(medians), tuple(processes), tuple(rounds))


def point(levels, noise=0.01, heavy=False, seed=0, speedups=(1.0, 1.3, 1.8)) -> list[BlockSeries]:
    """Every variant of a point, 3 processes each (offsets within 2%), all following the machine's ``levels``
    (its speed per round)."""
    rng = np.random.default_rng(seed)
    return [blocks(np.asarray(levels) * 20.0 / s, [1.0, 1.015, 0.99], noise, rng, heavy) for s in speedups]


def test_common_factor_removes_each_process_offset_and_variant_speed():
    levels = np.r_[np.ones(10), np.full(10, 1.2)]
    rounds, factor = common_factor(point(levels, noise=0.0))
    assert rounds.tolist() == list(range(20))
    assert np.allclose(np.exp(factor[10:] - factor[:10]), 1.2)


@pytest.mark.parametrize("heavy", [False, True])
def test_a_stationary_noisy_series_is_one_regime(heavy):
    for seed in range(5):
        regimes = find_regimes(point(np.ones(60), noise=0.02, heavy=heavy, seed=seed))
        assert [(r.start, r.end, r.rounds, r.slowdown) for r in regimes] == [(0, 59, 60, 1.0)], seed


def test_known_change_points_are_found_within_a_few_rounds():
    levels = np.r_[np.ones(30), np.full(20, 1.05), np.ones(30)]
    regimes = find_regimes(point(levels, noise=0.01, seed=1))
    assert len(regimes) == 3
    assert abs(regimes[1].start - 30) <= 2 and abs(regimes[2].start - 50) <= 2
    assert regimes[1].slowdown == pytest.approx(1.05, abs=0.01) and regimes[0].slowdown == pytest.approx(1.0, abs=0.01)
    # a long run is binned before PELT: its change is found within a bin
    long = find_regimes(point(np.r_[np.ones(140), np.full(100, 1.1)], noise=0.01, seed=2))
    assert len(long) == 2 and abs(long[1].start - 140) <= math.ceil(240 / 60)


def test_a_shift_below_min_shift_is_no_regime():
    levels = np.r_[np.ones(30), np.full(30, 1 + MIN_SHIFT / 2)]
    assert len(find_regimes(point(levels, noise=0.001, seed=3))) == 1


def test_the_evidence_scripts_series_two_regimes_19_percent_apart():
    """regimes.py's run: eager resnet18 at b4 about 23.5 ms for 17 rounds, then about 28.5 ms for 20, every process
    at once (process-luck.md); block noise about 1%."""
    levels = np.r_[np.full(17, 23.5), np.full(20, 28.5)] / 23.5
    regimes = find_regimes(point(levels, noise=0.01, seed=4, speedups=(1.0, 1.05)))
    assert [(r.start, r.end) for r in regimes] in ([(0, 16), (17, 36)], [(0, 15), (16, 36)], [(0, 17), (18, 36)])
    assert regimes[1].slowdown == pytest.approx(28.5 / 23.5, rel=0.02)
    assert regimes[1].text().startswith(f"rounds {regimes[1].start}-36 (")


def test_regime_test_a_speedup_of_1_03_in_one_regime_and_1_06_in_the_other_is_named_regime_dependent():
    """The issue's regime test at the statistics level: a shared slowdown switched on at round 25 of 50 slows eager
    by 20% and the variant less, so its speedup goes from 1.03 to 1.06."""
    rng = np.random.default_rng(5)
    switch, n = 25, 50
    slow = np.r_[np.ones(switch), np.full(n - switch, 1.2)]
    eager = blocks(20.0 * slow, [1.0, 1.01, 0.995], 0.005, rng)
    variant_slow = np.r_[np.ones(switch), np.full(n - switch, 1.2 * 1.03 / 1.06)]
    variant = blocks(20.0 / 1.03 * variant_slow, [1.0, 0.99, 1.005], 0.005, rng)
    regimes = find_regimes([eager, variant])
    assert len(regimes) == 2 and abs(regimes[1].start - switch) <= 2
    assert [r.rounds for r in regimes] == [regimes[0].end + 1, n - regimes[1].start]
    per_regime = regime_speedups(eager, variant, regimes)
    assert per_regime[0].value == pytest.approx(1.03, abs=0.01) and per_regime[1].value == pytest.approx(1.06, abs=0.01)
    # the same processes in both
    assert regime_dependent(regime_speedups(eager, variant, regimes, resample_processes=False))
    overall = speedup_interval(eager, variant)
    reported = covering(overall, per_regime)
    assert reported.low <= per_regime[0].low and reported.high >= per_regime[1].high  # both regimes, not their mix
    # the same pair without the switch: one regime, nothing regime-dependent
    steady = find_regimes([blocks(np.full(n, 20.0), [1.0, 1.01], 0.005, rng),
                           blocks(np.full(n, 20.0 / 1.03), [1.0, 0.99], 0.005, rng)])
    assert len(steady) == 1


def test_regime_dependent_needs_two_finite_intervals_apart():
    from trtbench.core.stats import Interval

    assert not regime_dependent([Interval(1.03, 1.0, 1.05), Interval(1.06, 1.04, 1.08), None])
    assert not regime_dependent([Interval(1.03, -math.inf, math.inf), Interval(1.06, 1.05, 1.07)])
    assert regime_dependent([Interval(1.03, 1.02, 1.04), Interval(1.06, 1.05, 1.07)])


def test_a_series_too_short_or_too_flat_for_two_regimes_skips_the_search(monkeypatch):
    """Under 6 rounds, or with every value but the extremes within 2%, no split can survive: ruptures (seconds to
    import, with scipy) is not asked."""
    import builtins

    real_import = builtins.__import__

    def no_ruptures(name, *args, **kwargs):
        if name == "ruptures":
            raise AssertionError("ruptures was imported")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_ruptures)
    assert len(find_regimes(point(np.r_[np.ones(2), np.full(3, 1.5)], noise=0.0))) == 1  # 5 rounds
    flat = np.ones(40)
    flat[[3, 30]] = (1.5, 0.6)  # one outlier each way
    assert len(find_regimes(point(flat, noise=0.002))) == 1
    with pytest.raises(AssertionError, match="ruptures was imported"):
        find_regimes(point(np.r_[np.ones(20), np.full(20, 1.2)], noise=0.002))
