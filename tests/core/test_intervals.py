"""Two-level intervals (trtbench.core.stats): block medians resampled by round (shared by every series) and by
process (each series on its own), on synthetic block series with known luck."""

from __future__ import annotations

import math

import numpy as np
import pytest

from trtbench.core.case import Case
from trtbench.core.record import Record
from trtbench.core.stats import (BlockSeries, RESOLVED_PROCESSES, median_interval, pooled_between_variance,
                                 speedup_interval)

SLOW = 1.08  # the toy: a process is slow by 8% ...
SLOW_ODDS = 1 / 3  # ... with probability 1/3, drawn once at its start


def series(ms, offsets, rounds: int, drift=None, noise: float = 0.005, rng=None) -> BlockSeries:
    """One variant's blocks: ``ms`` x its process's offset x the round's drift x noise, every process in every round."""
    rng = rng or np.random.default_rng(0)
    drift = np.ones(rounds) if drift is None else drift
    medians, processes, round_ids = [], [], []
    for process, offset in enumerate(offsets):
        for r in range(rounds):
            medians.append(float(ms * offset * drift[r] * math.exp(noise * rng.standard_normal())))
            processes.append(process)
            round_ids.append(r)
    return BlockSeries(tuple(medians), tuple(processes), tuple(round_ids))


def test_one_process_covers_its_rounds_and_drift_shared_by_both_series_cancels():
    rng = np.random.default_rng(2)
    drift = np.linspace(1.0, 1.6, 30)  # the machine slows down over the run, for both variants alike
    base, this = series(10.0, [1.0], 30, drift, rng=rng), series(5.0, [1.0], 30, drift, rng=rng)
    paired = speedup_interval(base, this)
    assert paired.value == pytest.approx(2.0, rel=0.01)
    assert paired.low <= 2.0 <= paired.high and paired.rel_halfwidth < 0.02
    # the same blocks with this series' rounds relabelled at random: the pairing is lost, the interval widens
    shuffled = BlockSeries(this.medians, this.processes, tuple(int(r) for r in rng.permutation(30)))
    assert speedup_interval(base, shuffled).rel_halfwidth > 5 * paired.rel_halfwidth
    # the median's interval covers the drift it saw
    assert median_interval(base).rel_halfwidth > 0.05


def test_processes_that_differ_widen_the_interval_one_process_does_not_show():
    rng = np.random.default_rng(3)
    one = series(10.0, [1.0], 40, rng=rng)
    three = series(10.0, [1.0, 1.04, 0.97], 40, rng=rng)
    assert one.process_count == 1 and three.process_count == 3
    assert median_interval(three).rel_halfwidth > 3 * median_interval(one).rel_halfwidth
    assert three.between_variance() == pytest.approx(np.var(np.log([1.0, 1.04, 0.97]), ddof=1), rel=0.2)
    assert one.between_variance() is None


def test_pooled_between_variance_weighs_rows_by_their_processes_and_tops_up_rows_that_look_alike():
    rng = np.random.default_rng(4)
    alike = series(10.0, [1.0, 1.0, 1.0], 40, rng=rng)  # three processes that happened to agree
    apart = series(10.0, [1.0, 1.05, 0.95, 1.02, 0.98], 40, rng=rng)
    pooled = pooled_between_variance([alike, apart, series(3.0, [1.0], 40, rng=rng)])
    expected = (2 * alike.between_variance() + 4 * apart.between_variance()) / 6  # one process adds nothing
    assert pooled == pytest.approx(expected)
    assert pooled_between_variance([series(3.0, [1.0], 40, rng=rng)]) is None
    own, topped = median_interval(alike), median_interval(alike, between_var=pooled)
    assert topped.rel_halfwidth > 3 * own.rel_halfwidth  # its own spread is not resolved: the pooled one is used
    resolved = series(10.0, [1.0] * RESOLVED_PROCESSES, 20, rng=rng)
    assert median_interval(resolved, between_var=pooled).rel_halfwidth == pytest.approx(
        median_interval(resolved).rel_halfwidth)  # enough processes: its own spread stands


def test_the_speedup_paired_by_round_holds_where_the_machine_jumps_between_two_speeds():
    """The machine runs each round fast or 30% slow at random, and a block now and then (15%) meets the other
    speed than its round's other block; each variant's processes take the rounds in turn. The ratio of the two
    sides' medians moves with which mode each median landed in, while the median of the rounds' ratios stays at
    the true speedup (2.0) run after run, and its interval holds it."""
    paired, of_medians = [], []
    processes = tuple(r % 3 for r in range(30))
    for seed in range(20):
        rng = np.random.default_rng(seed)
        slow = rng.random(30) < 0.5
        sides = []
        for ms in (10.0, 5.0):
            own = np.where(rng.random(30) < 0.15, ~slow, slow)
            sides.append(BlockSeries(tuple(float(ms * (1.3 if own[r] else 1.0) * math.exp(0.01 * rng.standard_normal()))
                                           for r in range(30)), processes, tuple(range(30))))
        interval = speedup_interval(*sides)
        assert interval.low <= 2.0 <= interval.high, (seed, interval)
        paired.append(interval.value)
        of_medians.append(float(np.median(sides[0].medians) / np.median(sides[1].medians)))
    assert max(abs(v / 2.0 - 1) for v in paired) < 0.02
    assert max(abs(v / 2.0 - 1) for v in of_medians) > 0.15  # a side's median in the other mode than the other's


def test_speedup_pairs_on_the_rounds_both_series_share():
    rng = np.random.default_rng(5)
    base = series(10.0, [1.0, 1.0], 30, rng=rng)
    this = series(5.0, [1.0], 30, rng=rng).only_rounds(range(12))  # left the rounds early (adaptive stop)
    interval = speedup_interval(base, this)
    assert interval.value == pytest.approx(2.0, rel=0.02) and interval.low <= 2.0 <= interval.high
    assert math.isinf(speedup_interval(base, this.only_rounds(range(2))).high)  # under 3 common rounds
    with pytest.raises(ValueError, match="share no round"):
        speedup_interval(base, BlockSeries((5.0,), (0,), (99,)))


def test_a_record_written_before_replicate_processes_reads_as_one_process_in_round_order():
    record = Record.from_dict({"case": Case("torchvision:resnet18", "eager", "fp32", "opt", ((1, 3, 8, 8),), 2,
                                            "cpu").to_dict(), "environment": "e", "status": "ok",
                               "rounds": [[1.0, 3.0], [2.0], [], [4.0, 4.0, 5.0]]})
    blocks = record.block_series
    assert record.process_count == 1
    assert blocks == BlockSeries((2.0, 2.0, 4.0), (0, 0, 0), (0, 1, 3))  # the empty block left out
    new = Record.from_dict({**record.to_dict(), "rounds": [[1.0], [2.0], [3.0]], "block_process": [0, 1, 0],
                            "block_round": [0, 0, 1]})
    assert new.block_series == BlockSeries((1.0, 2.0, 3.0), (0, 1, 0), (0, 0, 1)) and new.process_count == 2


def toy_run(seed: int, processes: int, speedups=(1.0, 1.1, 1.25, 1.4, 1.6, 2.0), rounds: int = 20) -> list:
    """The issue's toy, as statistics see it: eager and five variants, each process of each slow (+8%) with
    probability 1/3, the machine's drift shared by every block of a round (3%), blocks within 0.5%; each
    variant's speedup interval over eager with the run's pooled between-process variance."""
    rng = np.random.default_rng(seed)
    drift = np.exp(0.03 * rng.standard_normal(rounds))
    rows = [series(10.0 / s, [SLOW if rng.random() < SLOW_ODDS else 1.0 for _ in range(processes)], rounds, drift,
                   rng=rng) for s in speedups]
    pooled = pooled_between_variance(rows)
    return [speedup_interval(rows[0], row, pooled) for row in rows[1:]]


def _toy_checks(processes: int, seeds: int = 16) -> tuple[float, float, float]:
    """Over pairs of independent toy runs: how often their intervals overlap, how often an interval covers the
    speedup the mixture implies (the typical process is fast for every variant: the true speedup), and how often
    an interval excludes the other run's speedup."""
    truths = (1.1, 1.25, 1.4, 1.6, 2.0)
    overlap = cover = exclude = 0
    for seed in range(seeds):
        for a, b, truth in zip(toy_run(2 * seed, processes), toy_run(2 * seed + 1, processes), truths):
            overlap += a.low <= b.high and b.low <= a.high
            cover += a.low <= truth <= a.high
            exclude += not a.low <= b.value <= a.high
    n = seeds * len(truths)
    return overlap / n, cover / n, exclude / n


def test_toy_with_three_processes_runs_agree_and_cover_the_mixture_one_process_does_not():
    overlap, cover, exclude = _toy_checks(3)
    assert overlap >= 0.9 and cover >= 0.85 and exclude <= 0.25, (overlap, cover, exclude)
    overlap1, cover1, exclude1 = _toy_checks(1)  # today's single process per variant: the luck is unseen
    assert exclude1 >= 0.4 and overlap1 <= 0.7, (overlap1, cover1, exclude1)
