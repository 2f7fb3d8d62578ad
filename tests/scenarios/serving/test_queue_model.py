"""The queue model the vision peak search reads its steps through (trtbench/scenarios/serving/loadgen/queue_model.py),
held against the tests' own queue (tests/helpers/queue_model.py: a heap of free servers, Erlang's formula)."""

from __future__ import annotations

import numpy as np
import pytest

from helpers.queue_model import PERCENTILE, md1_late_share, md_c_latencies, mg_c_latencies
from trtbench.scenarios.serving.loadgen.queue_model import (KAPPAS, QueueModel, late_counts, posterior, steady_peak,
                                                            steady_share)

SERVICE_S, BOUND_S = 0.0102, 0.040
SERVICES = (0.009, 0.0102, 0.011, 0.03)  # a tail: one call in four three times as long


@pytest.mark.parametrize("servers", [1, 2, 4])
def test_the_late_counts_are_the_queues_query_for_query(servers):
    """The model's late counts after 100, 700 and 2000 queries are the tests' M/G/c and M/D/c queues' (the same draws),
    at a load below and one above the capacity."""
    rng = np.random.default_rng(servers)
    gaps, drawn = rng.exponential(1.0, 2000), rng.choice(SERVICES, 2000)
    sizes = np.array([100, 700, 2000])
    tail = QueueModel(SERVICES, servers, BOUND_S)
    loads = np.array([0.8, 1.1]) * tail.capacity
    counts = tail.counts(loads, gaps[None], drawn[None], sizes)[:, :, 0]
    for i, load in enumerate(loads):
        expected = np.cumsum(mg_c_latencies(load, drawn, servers, gaps) > BOUND_S)[sizes - 1]
        assert counts[:, i].tolist() == expected.tolist()
    one = QueueModel((SERVICE_S,), servers, BOUND_S)
    load = 0.9 * one.capacity
    counts = one.counts(np.array([load]), gaps[None], np.full((1, 2000), SERVICE_S), sizes)[:, 0, 0]
    assert counts.tolist() == np.cumsum(md_c_latencies(load, SERVICE_S, servers, gaps) > BOUND_S)[sizes - 1].tolist()
    assert counts[-1] > 0, "a load where some queries are late"


def test_the_steady_peak_is_erlangs_at_one_server_and_a_long_runs_at_two():
    """M/D/1's peak within 1% of Erlang's formula's; at 2 servers with a tail, the steady late share a long run of
    the tests' queue gives, and the peak where it reaches the allowed share."""
    allowed = 1 - PERCENTILE
    one = steady_peak(QueueModel((SERVICE_S,), 1, BOUND_S), allowed)
    assert md1_late_share(one * 0.99, SERVICE_S, BOUND_S) < allowed < md1_late_share(one * 1.01, SERVICE_S, BOUND_S)
    two = QueueModel(SERVICES, 2, BOUND_S)
    rng = np.random.default_rng(2)
    gaps, drawn = rng.exponential(1.0, 200_000), rng.choice(SERVICES, 200_000)
    for qps in (36.0, 44.0):
        long_run = float(np.mean(mg_c_latencies(qps, drawn, 2, gaps)[2000:] > BOUND_S))
        assert steady_share(two, qps) == pytest.approx(long_run, rel=0.1)
    peak = steady_peak(two, allowed)
    assert steady_share(two, peak * 0.97) < allowed < steady_share(two, peak * 1.03)


def test_a_model_of_recorded_service_times_changes_as_their_count_doubles():
    times = [0.01 + i * 1e-6 for i in range(1500)]
    assert len(QueueModel.recorded(times, 2, BOUND_S).services_s) == 1024
    assert QueueModel.recorded(times[:1100], 2, BOUND_S) == QueueModel.recorded(times[:2000], 2, BOUND_S)
    assert len(QueueModel.recorded(times[:3], 1, BOUND_S).services_s) == 2


def test_the_load_scale_of_steps_from_the_model_itself_holds_one():
    """Ten searches' worth of steps drawn from the model's own queue: their load scale's 90% interval holds 1 in at
    least 8 of 10 and is under 30% wide; steps from a queue twice as busy (every gap halved) give one near 2."""
    model = QueueModel((SERVICE_S,), 2, BOUND_S)
    loads = steady_peak(model, 1 - PERCENTILE) * np.array([0.9, 0.96, 1.04, 1.12] * 4)
    rng = np.random.default_rng(5)

    def late_at(scale: float) -> list[int]:
        return [int(np.sum(md_c_latencies(scale * q, SERVICE_S, 2, rng.exponential(1.0, 500)) > BOUND_S))
                for q in loads / scale]
    scales = [posterior(model, loads, [500] * len(loads), late_at(1.0)) for _ in range(10)]
    assert sum(s.kappa(0.05) <= 1.0 <= s.kappa(0.95) for s in scales) >= 8
    assert all(s.kappa(0.95) / s.kappa(0.05) < 1.3 for s in scales)
    assert posterior(model, loads / 2, [500] * len(loads), late_at(2.0)).kappa(0.5) == pytest.approx(2.0, rel=0.1)
    assert set(late_counts(model, (500,))) == {500} and KAPPAS[0] == pytest.approx(0.5)


def test_a_service_time_over_the_bound_puts_the_peak_near_no_load():
    """One call in four takes longer than the bound: late beyond any allowed share at every load, so the steady peak
    is the lowest load searched, a small share of the capacity."""
    model = QueueModel((0.01, 0.01, 0.01, 0.05), 1, BOUND_S)
    assert 0 < steady_peak(model, 1 - PERCENTILE) < 0.01 * model.capacity
