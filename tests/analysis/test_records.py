"""The analysis of a set of records (trtbench.analysis.records): made again after the set changes, each point's
records with its regimes, the unpaired speedup of two settings and the ratio of two runs."""

from __future__ import annotations

import numpy as np
import pytest

from helpers.records import record, replicated, two_variant_set
from trtbench.analysis.records import Analysis, runs_ratio
from trtbench.core.record import Record
from trtbench.core.stats import bootstrap_median_ratio


def test_a_result_sets_analysis_is_made_again_after_an_add():
    results = two_variant_set()
    traced = next(r for r in results if r.case.variant == "traced")
    first = results.analysis
    assert results.speedup(traced).value == pytest.approx(2.5)
    results.add(record("eager", 20.0, accuracy={"ok": True, "max_abs_err": 0.0}))  # eager timed again, slower
    assert results.analysis is not first and results.speedup(traced).value == pytest.approx(5.0)


def test_points_group_the_timed_records_timed_in_the_same_rounds():
    results = two_variant_set()
    results.add(record("eager", 10.0, env="env-b"))
    points = results.analysis.points()
    assert [[r.case.variant for r in records] for records, _ in points] == [["eager", "traced"], ["eager"]]
    assert all(len(regimes) == 1 for _, regimes in points)  # a steady machine: one regime each


def test_the_unpaired_speedup_is_the_ratio_of_call_medians_with_both_sides_resampled():
    slow, fast = replicated("eager", np.full(12, 20.0), [1.0, 1.01, 0.99]), replicated("traced", np.full(12, 10.0),
                                                                                         [1.0, 1.01], seed=1)
    analysis = Analysis([slow, fast])
    interval = analysis.unpaired_speedup(slow, fast)
    assert interval.value == pytest.approx(slow.stats.median / fast.stats.median)
    assert interval.low < interval.value < interval.high and interval.rel_halfwidth < 0.05
    failed = Record(case=record("scripted", 1.0).case, environment="e", status="failed", reason="no")
    assert analysis.unpaired_speedup(slow, failed) is None


def test_two_runs_under_3_rounds_are_compared_on_their_calls():
    """A record of one round (a version 1 results.json) has no rounds to resample: its calls are."""
    base, new = record("eager", 10.0), record("eager", 8.0)
    one_round = [base.block_series.only_rounds([0]), new.block_series.only_rounds([0])]
    ratio = runs_ratio(base.samples_ms, new.samples_ms, *one_round, None)
    assert ratio.value == pytest.approx(10.0 / 8.0)
    assert ratio == bootstrap_median_ratio(base.samples_ms, new.samples_ms)
    blocks = runs_ratio(base.samples_ms, new.samples_ms, base.block_series, new.block_series, None)
    assert blocks.value == ratio.value and (blocks.low, blocks.high) != (ratio.low, ratio.high)
